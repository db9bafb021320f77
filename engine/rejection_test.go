package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// TestEngine_UnhandledRejection_FailsTheWorkunit: a promise rejected with
// no handler by the time the workunit ends fails it with the rejection's
// reason, as an unhandled rejection ends a Node process; one handled,
// even later in the workunit, does not.
func TestEngine_UnhandledRejection_FailsTheWorkunit(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	for _, src := range []string{
		`Promise.reject(new TypeError('lost')); 1`,
		`(async () => { throw new TypeError('lost') })(); 1`,
		`(async () => { await null; setTimeout(() => {}, 1); return 1 })().then(() => Promise.reject(new TypeError('lost'))); 1`,
		`new Promise(res => setTimeout(res, 5)).then(() => { Promise.reject(new TypeError('lost')) }); new Promise(res => setTimeout(() => res(1), 10))`,
	} {
		_, err := e.Eval(context.Background(), src)
		var werr *workunit.Error
		require.ErrorAs(t, err, &werr, src)
		assert.Equal(t, "TypeError", werr.Name, src)
		assert.Equal(t, "lost", werr.Message, src)
	}
	for _, src := range []string{
		`{ const p = Promise.reject(new Error('x')); p.catch(() => {}); 1 }`,
		`{ const q = Promise.reject(new Error('x')); Promise.resolve().then(() => q.catch(() => {})); 1 }`,
		`(async () => { try { await Promise.reject(new Error('x')) } catch {} })(); 1`,
	} {
		res, err := e.Eval(context.Background(), src)
		require.NoError(t, err, src)
		assert.NotEmpty(t, res.Value, src)
	}
	// A rejection left by one workunit is not the next one's.
	res, err := e.Eval(context.Background(), `1`)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Value)
}
