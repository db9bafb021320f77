package capture

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunk is 25 lines of varied code; %[1]d makes its names unique.
const chunk = `const limit%[1]d = %[1]d, words%[1]d = ['ab', 'cd', 'ef'];
function helper%[1]d(a, { b = limit%[1]d, c: [d] = [1] } = {}, ...rest) {
	let total = a + b + d + rest.length;
	for (let i = 0; i < 3; i++) {
		total += [1, 2, 3].map((x) => x * i + limit%[1]d).reduce((p, q) => p + q, 0);
	}
	return total;
}
class Shape%[1]d extends Object {
	#side = 1;
	static unit = 'cm';
	constructor(side) { super(); this.#side = side; }
	area() { return this.#side * this.#side * limit%[1]d; }
	get label() { return ` + "`shape ${Shape%[1]d.unit}`" + `; }
}
const tools%[1]d = {
	join(a, b) { return a + b; },
	has: (w) => words%[1]d.includes(w),
	async later(v) { await null; return helper%[1]d(v); },
};
function* pairs%[1]d() { for (const a of words%[1]d) for (const b of words%[1]d) yield tools%[1]d.join(a, b); }
try { helper%[1]d(1) } catch ({ message }) { (() => message)(); }
label%[1]d: for (const p of pairs%[1]d()) { if (tools%[1]d.has(p)) break label%[1]d; }
switch (limit%[1]d %% 3) { case 0: function sw%[1]d() { return 0 } break; default: sw%[1]d(); }
const result%[1]d = new Shape%[1]d(2).area() + helper%[1]d(2, {}, 3, 4);
`

func generatedScript(lines int) string {
	var b strings.Builder
	for i := 0; strings.Count(b.String(), "\n") < lines; i++ {
		fmt.Fprintf(&b, chunk, i)
	}
	return b.String()
}

func TestInstrument_LargeGeneratedScript(t *testing.T) {
	t.Parallel()
	src := generatedScript(5000)
	s, err := Instrument("big.js", src, Options{})
	require.NoError(t, err)
	assert.Equal(t, strings.Count(src, "\n"), strings.Count(s.Source, "\n"))
	assert.Greater(t, len(s.Funcs), 2000)

	orig := goja.New()
	want, err := orig.RunScript("big.js", src+"\nresult7")
	require.NoError(t, err)
	rt := goja.New()
	require.NoError(t, rt.Set(DefaultHook, func(c goja.FunctionCall) goja.Value { return c.Argument(2) }))
	got, err := rt.RunScript("big.js", s.Source+"\nresult7")
	require.NoError(t, err)
	assert.Equal(t, want.Export(), got.Export())
}

func BenchmarkInstrument5000Lines(b *testing.B) {
	src := generatedScript(5000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Instrument("big.js", src, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseOnly5000Lines is the floor: goja's parser alone.
func BenchmarkParseOnly5000Lines(b *testing.B) {
	src := generatedScript(5000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := goja.Parse("big.js", src); err != nil {
			b.Fatal(err)
		}
	}
}
