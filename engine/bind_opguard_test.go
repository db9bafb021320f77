package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/workunit"
)

// An error that the guard of the BigInt operators leaves to the operator
// itself (a BigInt mixed with a number), or that a conversion it makes
// throws, has a stack without the guard's frames: it begins at the
// operator. A regression test: the stack began at "opguard:1:12", the
// operator compiled without the guard, and a thrown value's stack showed
// the guard's Go function.
func TestEngine_OpGuard_Stacks(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	for _, src := range []string{
		"{ let a = 2n, b = 2\nfunction f() {\n  return a ** b\n}\nf() }",
		"{ let a = 2n, b = 2\nfunction f() {\n  return a << b\n}\nf() }",
		"{ let a = {valueOf() { throw 7 }}, b = 2n\nfunction f() {\n  return a >> b\n}\nf() }",
		"{ let a = {valueOf() { throw new TypeError('no') }}, b = 2n\nfunction f() {\n  return a ** b\n}\nf() }",
	} {
		werr, _ := evalError(t, e, Request{Spec: &workunit.Spec{Kind: workunit.Eval, Name: "job.js", Source: src}})
		assert.NotContains(t, werr.Stack, "opguard", src)
		assert.NotRegexp(t, `at (\n|$)`, werr.Stack, "no empty frame where one was left out")
		assert.Contains(t, werr.Stack, "at f (job.js:3:", src)
		assert.Contains(t, werr.Stack, "at job.js:5:", src)
	}
}
