package jschild_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// fakeRefusingHost refuses every child, as a worker's connection reports
// a tracker's refusal: Submit returns the key, Wait the error.
type fakeRefusingHost struct{ err error }

func (h fakeRefusingHost) Submit(spec *workunit.Spec, _ workunit.Options) workunit.Key {
	_, key := spec.Encode()
	return key
}
func (fakeRefusingHost) Finished(workunit.Key) bool { return true }
func (h fakeRefusingHost) Wait(_ context.Context, key workunit.Key) (*workunit.Outcome, error) {
	return nil, fmt.Errorf("client: submit %s: %w", key.Short(), h.err)
}
func (fakeRefusingHost) Secede() {}
func (fakeRefusingHost) Rejoin() {}

// A child refused for the tracker's memory bound throws a
// TrackerMemoryFullError with the tracker's message, which the workunit
// can catch; another refusal throws an Error.
func TestChildren_RefusedForMemory(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 1)
	src := `() => {
		const id = riot.doWork(() => 1);
		try { riot.waitUntilDone(id); } catch (e) { return [e.name, e.message]; }
	}`
	payload, err := value.Marshal([]any{&value.Function{Source: src, File: "test.js", Line: 1, Column: 1}})
	require.NoError(t, err)
	spec := &workunit.Spec{Kind: workunit.Fn, Name: "test.js", Payload: payload}
	for _, c := range []struct {
		err  error
		name string
	}{
		{&wire.Error{Req: 2, Code: wire.CodeMemoryFull, Message: "tracker: memory full: raise --max-memory"}, "TrackerMemoryFullError"},
		{&wire.Error{Req: 2, Code: wire.CodeLimit, Message: "too many waiting"}, "Error"},
	} {
		res, err := eng.Run(t.Context(), engine.Request{Spec: spec, Host: fakeRefusingHost{err: c.err}})
		require.NoError(t, err)
		v, err := res.Decode()
		require.NoError(t, err)
		got := v.([]any)
		assert.Equal(t, c.name, got[0])
		assert.Contains(t, got[1], "riot.waitUntilDone: workunit ")
		assert.Contains(t, got[1], c.err.(*wire.Error).Message)
	}
}
