package capture

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// text holds the original source and answers the lexical questions the walker
// cannot answer from goja's AST alone: where an identifier really ends (the AST
// measures parsed names, not source text), where dropped parentheses close, and
// which line and column an offset is on. All offsets are 0-based byte offsets.
type text struct {
	src   string
	lines []int       // start offset of each line
	regex map[int]int // start -> end of every regular expression literal seen
}

func newText(src string) *text {
	t := &text{src: src, lines: []int{0}, regex: map[int]int{}}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			i++
			t.lines = append(t.lines, i)
		case c == '\n':
			i++
			t.lines = append(t.lines, i)
		case c == 0xe2 && i+2 < len(src) && src[i+1] == 0x80 && (src[i+2] == 0xa8 || src[i+2] == 0xa9):
			i += 3 // U+2028, U+2029
			t.lines = append(t.lines, i)
		default:
			i++
		}
	}
	return t
}

// position returns the 1-based line and column (in bytes, as goja counts them)
// of offset off.
func (t *text) position(off int) (line, col int) {
	l := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	return l + 1, off - t.lines[l] + 1
}

// hasLineTerminator reports whether s contains a JavaScript line terminator.
func hasLineTerminator(s string) bool {
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}

// skipSpace returns the first offset at or after i that is neither white space
// nor inside a comment.
func (t *text) skipSpace(i int) int {
	src := t.src
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			i = t.lineCommentEnd(i)
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i = t.blockCommentEnd(i)
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(src[i:])
			if r != '\u2028' && r != '\u2029' && r != '\ufeff' && !unicode.Is(unicode.Zs, r) {
				return i
			}
			i += n
		default:
			return i
		}
	}
	return i
}

func (t *text) lineCommentEnd(i int) int {
	src := t.src
	for i < len(src) {
		c := src[i]
		if c == '\n' || c == '\r' {
			return i
		}
		if c == 0xe2 && i+2 < len(src) && src[i+1] == 0x80 && (src[i+2] == 0xa8 || src[i+2] == 0xa9) {
			return i
		}
		i++
	}
	return i
}

func (t *text) blockCommentEnd(i int) int {
	for j := i + 2; j+1 < len(t.src); j++ {
		if t.src[j] == '*' && t.src[j+1] == '/' {
			return j + 2
		}
	}
	return len(t.src)
}

// skipClosers skips white space, comments and closing parentheses from i and
// returns the offset of the next other character.
func (t *text) skipClosers(i int) int {
	for {
		i = t.skipSpace(i)
		if i < len(t.src) && t.src[i] == ')' {
			i++
			continue
		}
		return i
	}
}

// afterClosers returns the end of the last closing parenthesis that follows i
// (skipping white space and comments), or i when none follows. Unlike
// skipClosers it never moves past trailing white space.
func (t *text) afterClosers(i int) int {
	for {
		j := t.skipSpace(i)
		if j < len(t.src) && t.src[j] == ')' {
			i = j + 1
			continue
		}
		return i
	}
}

// identEnd returns the end of the identifier (or IdentifierName) that starts at
// i, reading escapes and non-ASCII identifier characters from the source text.
func (t *text) identEnd(i int) int {
	src := t.src
	for i < len(src) {
		c := src[i]
		switch {
		case c == '$' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == 'u':
			i += 2
			if i < len(src) && src[i] == '{' {
				for i < len(src) && src[i] != '}' {
					i++
				}
				i++
			} else {
				i += 4
			}
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(src[i:])
			if !isIdentPart(r) {
				return i
			}
			i += n
		default:
			return i
		}
	}
	return i
}

func isIdentPart(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) ||
		unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Nl, r) ||
		r == '\u200c' || r == '\u200d'
}

// netParens returns the number of '(' minus the number of ')' in the code
// between offsets a and b. Strings, template literals, regular expression
// literals (known from the AST) and comments are skipped.
func (t *text) netParens(a, b int) int {
	n := 0
	t.scanCode(a, b, false, &n)
	return n
}

// scanCode lexes code from i up to end, adding parentheses to *n. When
// inTemplate is set it stops after the '}' that closes a template substitution
// and returns the offset after it; otherwise it returns end.
func (t *text) scanCode(i, end int, inTemplate bool, n *int) int {
	src := t.src
	depth := 0
	for i < end {
		if e, ok := t.regex[i]; ok {
			i = e
			continue
		}
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			i = t.stringEnd(i)
		case c == '`':
			i = t.templateEnd(i)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			i = t.lineCommentEnd(i)
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i = t.blockCommentEnd(i)
		case c == '(':
			*n++
			i++
		case c == ')':
			*n--
			i++
		case c == '{':
			depth++
			i++
		case c == '}':
			i++
			if inTemplate {
				if depth == 0 {
					return i
				}
			}
			depth--
		default:
			i++
		}
	}
	return end
}

func (t *text) stringEnd(i int) int {
	q := t.src[i]
	for j := i + 1; j < len(t.src); j++ {
		switch t.src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		}
	}
	return len(t.src)
}

// templateEnd returns the offset after the template literal that starts at i.
func (t *text) templateEnd(i int) int {
	src := t.src
	var ignored int
	for j := i + 1; j < len(src); {
		switch {
		case src[j] == '\\':
			j += 2
		case src[j] == '`':
			return j + 1
		case src[j] == '$' && j+1 < len(src) && src[j+1] == '{':
			j = t.scanCode(j+2, len(src), true, &ignored)
		default:
			j++
		}
	}
	return len(src)
}
