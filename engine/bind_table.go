package engine

import (
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// Bounds of console.table: a table stops taking rows once its cells hold
// about maxTableBytes, or maxTableCells cells, and says how many rows it
// left out on a last line. Node prints every row; a workunit's console is
// bounded anyway (MaxConsoleBytes), and a table of a huge array must not
// take the worker's memory or time first.
const (
	maxTableBytes = inspect.DefaultMaxBytes
	maxTableCells = 1 << 16
)

// Column heads of console.table, as Node names them.
const (
	tableIndex     = "(index)"
	tableIteration = "(iteration index)"
	tableKey       = "Key"
	tableValues    = "Values"
)

// table is a console.table being made: its columns in order, each a list
// of cells by row ("" where a row has none), and what it may still take.
type table struct {
	rl      *realm
	own     goja.Callable         // (o, k) => Object.prototype.hasOwnProperty.call(o, k)
	many    map[*goja.Object]bool // objects of cells with more than two keys
	cols    map[string][]string   // by head; cells by row
	byIndex []string              // column heads that are array indexes, which JavaScript lists first
	byName  []string              // the other heads, in the order they came
	rows    int
	bytes   int
	cells   int
	checks  int // calls of full, for its looks at the run's context
}

func newTable(rl *realm, own goja.Callable) *table {
	return &table{rl: rl, own: own, cols: make(map[string][]string), many: make(map[*goja.Object]bool)}
}

// full reports whether the table took as much as it may, or the run it
// is made for was stopped (its time limit: the interrupt is seen once the
// table is done, and a huge one must not run on past it).
func (t *table) full() bool {
	if t.bytes > maxTableBytes || t.cells > maxTableCells {
		return true
	}
	if t.checks++; t.checks%1024 == 0 && t.rl.cur != nil && t.rl.cur.ctx.Err() != nil {
		t.bytes = maxTableBytes + 1
		return true
	}
	return false
}

// column adds column head, if the table has none of that name.
func (t *table) column(head string) {
	if _, ok := t.cols[head]; ok {
		return
	}
	t.cols[head] = nil
	if _, isIndex := jsvalue.ArrayIndex(head); isIndex {
		t.byIndex = append(t.byIndex, head)
	} else {
		t.byName = append(t.byName, head)
	}
}

// set puts a cell in column head, at row.
func (t *table) set(head string, row int, cell string) {
	t.column(head)
	col := t.cols[head]
	for len(col) <= row {
		col = append(col, "")
	}
	col[row] = cell
	t.cols[head] = col
	t.bytes += len(cell) + 3
	t.cells++
}

// cell formats a value of a cell.
func (t *table) cell(v goja.Value) string {
	o, ok := v.(*goja.Object)
	if !ok {
		return inspect.TableCell(t.rl.rt, t.rl.in, v, false)
	}
	many, seen := t.many[o]
	if !seen {
		// Counted once per object: a row of one object repeated must
		// not list its keys again for each cell.
		many = len(o.Keys()) > 2
		t.many[o] = many
	}
	return inspect.TableCell(t.rl.rt, t.rl.in, v, many)
}

// keys returns the own enumerable keys of o, at most limit of them: the
// indexes of a dense array are counted, not listed, so that a huge array
// costs what the table shows of it. total is how many there are.
func (t *table) keys(o *goja.Object, limit int) (keys []string, total int) {
	if n, dense := t.rl.in.DenseArray(o); dense {
		keys = make([]string, 0, min(n, limit))
		for i := 0; i < n && i < limit; i++ {
			keys = append(keys, strconv.Itoa(i))
		}
		return keys, n
	}
	all := o.Keys()
	return all[:min(len(all), limit)], len(all)
}

// consoleTable makes the text of console.table(data, properties), as Node
// does: a Map as its entries (iteration index, Key, Values), a Set as its
// values, and any other object as a row per own enumerable key, with a
// column per key of the rows that are objects (or per name of
// properties, when given) and a column Values for the rows that are not.
func consoleTable(rl *realm, own goja.Callable, data *goja.Object, properties []string, haveProps bool) string {
	t := newTable(rl, own)
	left := 0 // rows left out
	switch rl.in.Classify(data) {
	case jsvalue.KindMap, jsvalue.KindSet:
		isMap := rl.in.Classify(data) == jsvalue.KindMap
		forEach := rl.in.SetForEach
		if isMap {
			forEach = rl.in.MapForEach
		}
		kv, err := jsvalue.Entries(rl.rt, forEach, data)
		if err != nil {
			panic(err)
		}
		heads := []string{tableIteration, tableValues}
		if isMap {
			heads = []string{tableIteration, tableKey, tableValues}
		}
		for i := 0; i < len(kv); i += 2 {
			if t.full() {
				left = (len(kv) - i) / 2
				break
			}
			row := i / 2
			t.set(tableIteration, row, strconv.Itoa(row))
			if isMap {
				t.set(tableKey, row, t.cell(kv[i]))
			}
			t.set(tableValues, row, t.cell(kv[i+1]))
			t.rows++
		}
		return t.render(heads, left)
	}
	index, total := t.keys(data, maxTableCells)
	var values []string // the column Values, for rows that are primitives
	hasValues := false
	for i, k := range index {
		if t.full() {
			left = total - i
			break
		}
		item := data.Get(k)
		io, isObj := item.(*goja.Object)
		switch {
		case !haveProps && !isObj:
			hasValues = true
			for len(values) < i {
				values = append(values, "")
			}
			c := t.cell(item)
			values = append(values, c)
			t.bytes += len(c) + 3
			t.cells++
		default:
			names := properties
			if !haveProps {
				names, _ = t.keys(io, maxTableCells)
			}
			for _, name := range names {
				if t.full() {
					break
				}
				t.column(name)
				if !isObj || haveProps && !t.hasOwn(io, name) {
					t.set(name, i, "")
					continue
				}
				t.set(name, i, t.cell(io.Get(name)))
			}
		}
		t.rows++
	}
	if left == 0 && t.rows < total {
		left = total - t.rows
	}
	slices.SortFunc(t.byIndex, func(a, b string) int {
		x, _ := jsvalue.ArrayIndex(a)
		y, _ := jsvalue.ArrayIndex(b)
		return int(int64(x) - int64(y))
	})
	heads := append([]string{tableIndex}, t.byIndex...)
	heads = append(heads, t.byName...)
	t.cols[tableIndex] = index[:t.rows]
	if hasValues {
		heads = append(heads, tableValues)
		t.cols[tableValues] = values
	}
	return t.render(heads, left)
}

// hasOwn reports whether o has an own property name, as the built-in
// Object.prototype.hasOwnProperty says.
func (t *table) hasOwn(o *goja.Object, name string) bool {
	v, err := t.own(goja.Undefined(), o, t.rl.rt.ToValue(name))
	if err != nil {
		panic(err)
	}
	return v.ToBoolean()
}

// render writes the table as Node's cli_table does, each cell padded to
// its column's width, and a last line for the rows left out.
func (t *table) render(heads []string, left int) string {
	widths := make([]int, len(heads))
	for i, h := range heads {
		widths[i] = textWidth(h)
		for _, c := range t.cols[h] {
			widths[i] = max(widths[i], textWidth(c))
		}
	}
	var b strings.Builder
	line := func(l, mid, r string) {
		b.WriteString(l)
		for i, w := range widths {
			if i > 0 {
				b.WriteString(mid)
			}
			b.WriteString(strings.Repeat("─", w+2))
		}
		b.WriteString(r)
		b.WriteByte('\n')
	}
	row := func(cell func(i int) string) {
		b.WriteString("│ ")
		for i, w := range widths {
			if i > 0 {
				b.WriteString(" │ ")
			}
			c := cell(i)
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", w-textWidth(c)))
		}
		b.WriteString(" │\n")
	}
	line("┌", "┬", "┐")
	row(func(i int) string { return heads[i] })
	line("├", "┼", "┤")
	for r := range t.rows {
		row(func(i int) string {
			if col := t.cols[heads[i]]; r < len(col) {
				return col[r]
			}
			return ""
		})
	}
	line("└", "┴", "┘")
	out := strings.TrimSuffix(b.String(), "\n")
	if left > 0 {
		out += "\n... " + strconv.Itoa(left) + " more row" + map[bool]string{true: "", false: "s"}[left == 1] +
			" (console.table shows at most " + strconv.Itoa(maxTableCells) + " cells or " + strconv.Itoa(maxTableBytes>>10) + " KiB)"
	}
	return out
}

// textWidth is how many columns of a terminal s takes: wide East Asian
// characters and emoji two, combining marks none, others one.
func textWidth(s string) int {
	w := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r):
		case wideRune(r):
			w += 2
		default:
			w++
		}
	}
	return w
}

func wideRune(r rune) bool {
	switch {
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0x303E, r >= 0x3041 && r <= 0x33FF,
		r >= 0x3400 && r <= 0x4DBF, r >= 0x4E00 && r <= 0x9FFF, r >= 0xA000 && r <= 0xA4CF,
		r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F,
		r >= 0x1F900 && r <= 0x1F9FF, r >= 0x20000 && r <= 0x3FFFD:
		return true
	}
	return false
}
