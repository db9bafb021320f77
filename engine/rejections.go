package engine

import (
	"slices"

	"github.com/dop251/goja"
)

// Rejections are the promises of a runtime rejected with no handler yet,
// in the order of their rejection: what a goja promise rejection tracker
// (Runtime.SetPromiseRejectionTracker) keeps, for the code that reports
// unhandled rejections as Node does (a workunit's end, a job script's
// turn).
type Rejections []*goja.Promise

// Track is the rejection tracker's body: a promise rejected with no
// handler is added, and one that gets a handler is removed.
func (rs *Rejections) Track(p *goja.Promise, op goja.PromiseRejectionOperation) {
	switch op {
	case goja.PromiseRejectionReject:
		*rs = append(*rs, p)
	case goja.PromiseRejectionHandle:
		if i := slices.Index(*rs, p); i >= 0 {
			*rs = slices.Delete(*rs, i, i+1)
		}
	}
}
