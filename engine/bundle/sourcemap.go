package bundle

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Map maps positions of generated JavaScript back to the files it was made
// from. Generated columns count bytes, as goja counts them; original columns
// are as esbuild gives them (UTF-16 code units). Lines and columns are
// 0-based inside, 1-based in Lookup.
type Map struct {
	// Sources are the original files, relative to the script's directory
	// with forward slashes ("job.ts", "lib/util.ts").
	Sources []string
	// lines[l] are the segments of generated line l, by column.
	lines [][]segment
}

// segment maps the generated column col of a line to a position in a
// source; src is -1 for a segment that maps to nothing.
type segment struct {
	col, src, line, ocol int
}

// Span is text inserted into generated JavaScript: Len bytes before the byte
// at offset At.
type Span struct {
	At, Len int
}

// sourceMapV3 is the JSON form of a source map (revision 3).
type sourceMapV3 struct {
	Version  int      `json:"version"`
	File     string   `json:"file,omitempty"`
	Sources  []string `json:"sources"`
	Names    []string `json:"names"`
	Mappings string   `json:"mappings"`
}

// parseMap decodes esbuild's source map of gen, converting generated
// columns from UTF-16 code units to bytes of gen.
func parseMap(data []byte, gen string) (*Map, error) {
	var sm sourceMapV3
	if err := json.Unmarshal(data, &sm); err != nil {
		return nil, fmt.Errorf("bundle: source map: %w", err)
	}
	genLines := strings.Split(gen, "\n")
	m := &Map{Sources: sm.Sources}
	var src, line, ocol int
	for l, text := range strings.Split(sm.Mappings, ";") {
		var segs []segment
		col := 0
		for _, field := range strings.Split(text, ",") {
			if field == "" {
				continue
			}
			vals, err := decodeVLQ(field)
			if err != nil {
				return nil, err
			}
			col += vals[0]
			s := segment{col: col, src: -1}
			if len(vals) >= 4 {
				src += vals[1]
				line += vals[2]
				ocol += vals[3]
				s.src, s.line, s.ocol = src, line, ocol
			}
			segs = append(segs, s)
		}
		if l < len(genLines) {
			for i := range segs {
				segs[i].col = byteColumn(genLines[l], segs[i].col)
			}
		}
		m.lines = append(m.lines, segs)
	}
	return m, nil
}

// byteColumn converts a column in UTF-16 code units of line to bytes.
func byteColumn(line string, units int) int {
	n := 0
	for i, r := range line {
		if n >= units {
			return i
		}
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return len(line) + (units - n)
}

// shifted returns the map of text whose first lines lines were added above
// the generated code: the same mappings, moved down.
func (m *Map) shifted(lines int) *Map {
	out := &Map{Sources: m.Sources, lines: make([][]segment, lines, lines+len(m.lines))}
	out.lines = append(out.lines, m.lines...)
	return out
}

// Inserted returns the map of the text made from gen, the text m maps, by
// inserting the spans (sorted by At): every segment moves right by the
// bytes inserted before it on its line. Insertions never hold line breaks.
func (m *Map) Inserted(gen string, spans []Span) *Map {
	out := &Map{Sources: m.Sources, lines: make([][]segment, len(m.lines))}
	lineStart := 0
	k := 0
	for l, segs := range m.lines {
		end := strings.IndexByte(gen[min(lineStart, len(gen)):], '\n')
		lineEnd := len(gen)
		if end >= 0 {
			lineEnd = lineStart + end
		}
		var local []Span
		for k < len(spans) && spans[k].At <= lineEnd {
			if spans[k].At >= lineStart {
				local = append(local, Span{At: spans[k].At - lineStart, Len: spans[k].Len})
			}
			k++
		}
		ns := make([]segment, len(segs))
		for i, s := range segs {
			shift := 0
			for _, sp := range local {
				if sp.At <= s.col {
					shift += sp.Len
				}
			}
			s.col += shift
			ns[i] = s
		}
		out.lines[l] = ns
		lineStart = lineEnd + 1
	}
	return out
}

// Lookup gives the original position of the 1-based line and column of
// the generated text: the segment at or left of it on its line.
func (m *Map) Lookup(line, col int) (file string, oline, ocol int, ok bool) {
	l := line - 1
	if m == nil || l < 0 || l >= len(m.lines) {
		return "", 0, 0, false
	}
	segs := m.lines[l]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].col > col-1 }) - 1
	if i < 0 {
		// Before the first segment: the line's first mapping.
		i = 0
	}
	if i >= len(segs) || segs[i].src < 0 || segs[i].src >= len(m.Sources) {
		return "", 0, 0, false
	}
	s := segs[i]
	return m.Sources[s.src], s.line + 1, s.ocol + 1, true
}

// JSON encodes m as a source map (revision 3) of file.
func (m *Map) JSON(file string) []byte { return m.encode(file, 0) }

// encode encodes m with every column, generated and original, moved by
// shift.
func (m *Map) encode(file string, shift int) []byte {
	var b strings.Builder
	var psrc, pline, pcol int
	for l, segs := range m.lines {
		if l > 0 {
			b.WriteByte(';')
		}
		pgen := 0
		first := true
		for _, s := range segs {
			if s.src < 0 {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			encodeVLQ(&b, s.col+shift-pgen)
			encodeVLQ(&b, s.src-psrc)
			encodeVLQ(&b, s.line-pline)
			encodeVLQ(&b, s.ocol+shift-pcol)
			pgen, psrc, pline, pcol = s.col+shift, s.src, s.line, s.ocol+shift
		}
	}
	out, _ := json.Marshal(sourceMapV3{Version: 3, File: file, Sources: m.Sources, Names: []string{}, Mappings: b.String()})
	return out
}

// Comment is the line that attaches m to generated code as an inline
// source map, which goja reads when it compiles the code. Its columns are
// goja's, not the standard's: goja looks a position up by its 1-based
// column among the map's columns, which the standard counts from 0, and
// reports the original column it finds as it is; so every column is one
// more here, and a stack shows 1-based columns, as V8's do.
func (m *Map) Comment(file string) string {
	return "\n//# sourceMappingURL=data:application/json;base64," + base64.StdEncoding.EncodeToString(m.encode(file, 1))
}

// RemapStack rewrites the positions in a stack trace (or any text) that
// point into file, the generated code's name, to the original files'.
func (m *Map) RemapStack(text, file string) string {
	if m == nil || !strings.Contains(text, file+":") {
		return text
	}
	re := regexp.MustCompile(regexp.QuoteMeta(file) + `:(\d+):(\d+)`)
	return re.ReplaceAllStringFunc(text, func(s string) string {
		sub := re.FindStringSubmatch(s)
		line, _ := strconv.Atoi(sub[1])
		col, _ := strconv.Atoi(sub[2])
		if f, l, c, ok := m.Lookup(line, col); ok {
			return fmt.Sprintf("%s:%d:%d", f, l, c)
		}
		return s
	})
}

const vlqChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func decodeVLQ(s string) ([]int, error) {
	var out []int
	v, shift := 0, 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(vlqChars, s[i])
		if d < 0 {
			return nil, errors.New("bundle: source map: bad mappings")
		}
		v |= (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		if v&1 != 0 {
			out = append(out, -(v >> 1))
		} else {
			out = append(out, v>>1)
		}
		v, shift = 0, 0
	}
	if shift != 0 || len(out) == 0 {
		return nil, errors.New("bundle: source map: bad mappings")
	}
	return out, nil
}

func encodeVLQ(b *strings.Builder, v int) {
	u := v << 1
	if v < 0 {
		u = (-v)<<1 | 1
	}
	for {
		d := u & 31
		u >>= 5
		if u != 0 {
			d |= 32
		}
		b.WriteByte(vlqChars[d])
		if u == 0 {
			return
		}
	}
}
