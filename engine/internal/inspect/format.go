package inspect

import (
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// Format formats console arguments as Node's util.format: a first string
// argument may hold %s, %d, %i, %f, %j, %o, %O, %c and %%; the remaining
// arguments are appended, strings as they are and other values inspected.
func Format(rt *goja.Runtime, js *jsvalue.Intrinsics, args []goja.Value) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	rest := args
	if goja.IsString(args[0]) {
		f := args[0].String()
		rest = args[1:]
		for i := 0; i < len(f); i++ {
			c := f[i]
			if c != '%' || i+1 == len(f) {
				b.WriteByte(c)
				continue
			}
			verb := f[i+1]
			if verb == '%' {
				b.WriteByte('%')
				i++
				continue
			}
			if !strings.ContainsRune("sdifjoOc", rune(verb)) || len(rest) == 0 {
				b.WriteByte(c)
				continue
			}
			a := rest[0]
			rest = rest[1:]
			i++
			switch verb {
			case 's':
				if goja.IsString(a) {
					b.WriteString(a.String())
				} else {
					b.WriteString(Inspect(rt, js, a, Options{Depth: 1}))
				}
			case 'd', 'i':
				n := a.ToFloat()
				if verb == 'i' {
					n = float64(int64(n))
				}
				b.WriteString(FormatNumber(n))
			case 'f':
				b.WriteString(FormatNumber(a.ToFloat()))
			case 'j':
				b.WriteString(jsonOf(rt, a))
			case 'o', 'O':
				b.WriteString(Inspect(rt, js, a, Options{}))
			case 'c':
				// CSS: ignored, as Node does.
			}
		}
	}
	for _, a := range rest {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if goja.IsString(a) {
			b.WriteString(a.String())
		} else {
			b.WriteString(Inspect(rt, js, a, Options{}))
		}
	}
	return b.String()
}

func jsonOf(rt *goja.Runtime, v goja.Value) string {
	var out string
	if ex := rt.Try(func() {
		j := rt.Get("JSON").(*goja.Object)
		stringify, _ := goja.AssertFunction(j.Get("stringify"))
		r, err := stringify(j, v)
		if err != nil {
			out = "[" + err.Error() + "]"
			return
		}
		out = r.String()
	}); ex != nil {
		return "[Circular]"
	}
	return out
}
