package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A function knows whether it stands in strict code, so that it runs
// strict where it is shipped, as it does in the script.
func TestInstrument_Strict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    string
		strict map[string]bool // by selector
	}{
		{"sloppy script", `const f = () => 1; function g() { return 2 }`, map[string]bool{"f": false, "g": false}},
		{"strict script", "'use strict';\nconst f = () => 1; function g() { const h = () => 3 }",
			map[string]bool{"f": true, "g": true, "h": true}},
		{"double quotes, after another directive", "\"use asm\"; \"use strict\"\nconst f = () => 1;", map[string]bool{"f": true}},
		{"not a directive", "const x = 1; 'use strict';\nconst f = () => 1;", map[string]bool{"f": false}},
		{"escaped is not the directive", `'use\u0020strict'; const f = () => 1;`, map[string]bool{"f": false}},
		{"in a strict function", `function outer() { 'use strict'; const inner = () => 1; return inner }
			const after = () => 2;`, map[string]bool{"outer": false, "inner": true, "after": false}},
		{"in an arrow's block", `const outer = () => { "use strict"; return () => 1 }; const other = () => 2;`,
			map[string]bool{"outer": false, "@() => 1": true, "other": false}},
		{"in a class", `class C { m() { return () => 1 } static s() {} }; const after = () => 2;`,
			map[string]bool{"C": false, "m": true, "s": true, "@() => 1": true, "after": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Instrument("job.js", tt.src, Options{})
			require.NoError(t, err)
			for sel, want := range tt.strict {
				assert.Equal(t, want, findFunc(t, s, sel).Strict, sel)
			}
		})
	}
}
