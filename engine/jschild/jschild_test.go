package jschild_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jschild"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// host runs a workunit's children in the same engine, each on a goroutine
// of its own, as a worker would on its slots; each child gets a host of
// its own.
type host struct {
	eng     *engine.Engine
	blobs   blob.Source
	mu      sync.Mutex
	calls   map[workunit.Key]chan struct{}
	outs    map[workunit.Key]*workunit.Outcome
	specs   []*workunit.Spec // submitted, in order
	opts    []workunit.Options
	seceded int
}

func newHost(eng *engine.Engine) *host {
	return &host{eng: eng, calls: map[workunit.Key]chan struct{}{}, outs: map[workunit.Key]*workunit.Outcome{}}
}

func (h *host) Submit(spec *workunit.Spec, opts workunit.Options) workunit.Key {
	_, key := spec.Encode()
	done := make(chan struct{})
	h.mu.Lock()
	h.calls[key] = done
	h.specs = append(h.specs, spec)
	h.opts = append(h.opts, opts)
	h.mu.Unlock()
	go func() {
		child := newHost(h.eng)
		child.blobs = h.blobs
		res, err := h.eng.Run(context.Background(), engine.Request{Spec: spec, Blobs: h.blobs, Host: child})
		out := &workunit.Outcome{Key: key, Status: workunit.StatusDone, Worker: "test"}
		var werr *workunit.Error
		if errors.As(err, &werr) {
			out.Status, out.Err = workunit.StatusError, werr
		} else if err == nil {
			out.Result = res.Value
		}
		h.mu.Lock()
		h.outs[key] = out
		h.mu.Unlock()
		close(done)
	}()
	return key
}

func (h *host) Finished(key workunit.Key) bool {
	h.mu.Lock()
	_, ok := h.outs[key]
	h.mu.Unlock()
	return ok
}

func (h *host) Wait(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	h.mu.Lock()
	done := h.calls[key]
	h.mu.Unlock()
	if done == nil {
		return nil, errors.New("not a child")
	}
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.outs[key], nil
}

func (h *host) Secede() { h.mu.Lock(); h.seceded++; h.mu.Unlock() }
func (h *host) Rejoin() {}

func newEngine(t *testing.T, slots int) *engine.Engine {
	eng, err := engine.New(engine.Options{Slots: slots, Bindings: []engine.Binding{jschild.Binding()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

func run(t *testing.T, eng *engine.Engine, src string, args ...any) (any, error) {
	t.Helper()
	payload, err := value.Marshal(append([]any{&value.Function{Source: src, File: "test.js", Line: 1, Column: 1}}, args...))
	require.NoError(t, err)
	res, err := eng.Run(t.Context(), engine.Request{Spec: &workunit.Spec{Kind: workunit.Fn, Name: "test.js", Payload: payload}, Host: newHost(eng)})
	if err != nil {
		return nil, err
	}
	return res.Decode()
}

// A recursive function sends itself on to its children: on an engine of
// one slot, each waiting parent gives the slot up, so fib(8) split down
// to fib(1) finishes.
func TestChildren_RecursionOnOneSlot(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 1)
	v, err := run(t, eng, `function fib(n) {
		if (n < 2) return n;
		return riot.waitUntilDone(riot.doWork(fib, n - 1)) + riot.waitUntilDone(riot.doWork(fib, n - 2));
	}`, 8)
	require.NoError(t, err)
	assert.Equal(t, 21.0, v)
	assert.Zero(t, eng.Seceded(), "every parent took its slot back")
}

// A function that the workunit made with free variables of its own cannot
// be sent; one without free variables can, as can the await forms.
func TestChildren_Functions(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 2)
	v, err := run(t, eng, `(x) => riot.waitUntilDone(riot.doWork((y) => Math.abs(y) * 2, x))`, -21)
	require.NoError(t, err)
	assert.Equal(t, 42.0, v)

	// A closure the workunit's code makes travels with its free
	// variables' current values: the code calls riot, so the engine
	// instruments it as the master does a job script.
	v, err = run(t, eng, `(x) => {
		let k = 3;
		const f = (y) => [y * k, x];
		k = 4;
		return riot.forWork([1, 2], (y) => f(y)[0] + f(y)[1]);
	}`, 10)
	require.NoError(t, err)
	assert.Equal(t, []any{14.0, 18.0}, v)

	// A closure made by code that does not call riot (a helper) cannot:
	// its variables cannot be read.
	_, err = run(t, eng, `(mk) => riot.doWork(mk(3), 1)`, &value.Function{Source: `(k) => (y) => y * k`})
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, "DataCloneError", werr.Name)
	assert.Contains(t, werr.Message, "riot.doWork in a workunit takes a function the workunit received")
	assert.Contains(t, werr.Message, "was made by code that does not call riot, and uses k")

	v, err = run(t, eng, `async (xs) => {
		const [a, b] = await Promise.all([riot.run((y) => y + 1, 1), riot.runEval('40')]);
		const m = await riot.map(xs, (x, i) => x * i);
		return [a + b, m];
	}`, []any{5.0, 6.0})
	require.NoError(t, err)
	assert.Equal(t, []any{42.0, []any{0.0, 6.0}}, v)

	// riot.with gives the seed and the await forms with options.
	v, err = run(t, eng, `async (x) => {
		const w = riot.with({timeout: '10s', noCache: true});
		return [riot.waitUntilDone(w.doWork((y) => -y, x)), await w.run((y) => y * 10, x), w.forWork([1, 2], (y, i) => y + i)];
	}`, 4)
	require.NoError(t, err)
	assert.Equal(t, []any{-4.0, 40.0, []any{1.0, 3.0}}, v)
}

// A child's failure is the WorkunitError a master gets: its cause is the
// child's error, with its name and message.
func TestChildren_Failure(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 1)
	v, err := run(t, eng, `() => {
		try {
			riot.waitUntilDone(riot.doWork(() => { throw new TypeError('no') }));
		} catch (e) {
			return [e instanceof riot.WorkunitError, e.name, e.worker, e.kind, e.cause.name, e.cause.message, /failed on worker test: TypeError: no$/.test(e.message)];
		}
	}`)
	require.NoError(t, err)
	assert.Equal(t, []any{true, "WorkunitError", "test", "thrown", "TypeError", "no", true}, v)

	_, err = run(t, eng, `() => riot.with({retries: 2, tries: 1})`)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Contains(t, werr.Message, `riot.with: unknown option "tries" (options are gpus, noCache, timeout, retries and retryOn)`)
	_, err = run(t, eng, `() => riot.with({retryOn: [TypeError]})`)
	require.ErrorAs(t, err, &werr)
	assert.Contains(t, werr.Message, `riot.with: retryOn without retries: give retries too, such as {retries: 3, retryOn: ["TypeError"]}`)
}

// Without a worker (an engine used alone) the functions say why they
// cannot submit.
func TestChildren_NoHost(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 1)
	_, err := eng.Eval(t.Context(), `riot.doWork(() => 1)`)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Contains(t, werr.Message, "riot.doWork: this workunit runs where it cannot submit workunits")
}

// A call workunit calls its own module and those it requires, by the
// names it requires them with; others are an error that lists them.
func TestChildren_DoWorkCall(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 1)
	mods := blob.Map{}
	put := func(m *workunit.Module) blob.Hash {
		b, err := m.MarshalBinary()
		require.NoError(t, err)
		return mods.Put(b)
	}
	util := put(&workunit.Module{Path: "lib/util.js", Source: "exports.twice = (x) => 2 * x;"})
	main := put(&workunit.Module{Path: "main.js", Requires: map[string]blob.Hash{"./lib/util": util}, Source: `
		exports.leaf = (x) => x + 1;
		exports.tree = (x) => riot.waitUntilDone(riot.doWorkCall('.', 'leaf', x)) + riot.waitUntilDone(riot.doWorkCall('./lib/util', 'twice', x));
		exports.other = () => riot.doWorkCall('./nope', 'f');`})
	h := newHost(eng)
	h.blobs = mods
	call := func(export string, args ...any) (any, error) {
		payload, err := value.Marshal(append([]any{}, args...))
		require.NoError(t, err)
		res, err := eng.Run(t.Context(), engine.Request{Spec: &workunit.Spec{Kind: workunit.Call, Name: "main.js", Module: main, Export: export, Payload: payload}, Blobs: mods, Host: h})
		if err != nil {
			return nil, err
		}
		return res.Decode()
	}
	v, err := call("tree", 5.0)
	require.NoError(t, err)
	assert.Equal(t, 16.0, v)
	_, err = call("other")
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Contains(t, werr.Message, `riot.doWorkCall in a workunit: module "./nope" is not this workunit's module ("main.js", or '.') nor one it requires ("./lib/util")`)

	_, err = run(t, eng, `() => riot.doWorkCall('lib/util.js', 'twice', 1)`)
	require.ErrorAs(t, err, &werr)
	assert.Contains(t, werr.Message, "riot.doWorkCall in a workunit: only a call workunit")
}

// A value the workunit got as a blob (a large captured value) goes on to
// its children as that blob, not inline.
func TestChildren_BlobValuesStayBlobs(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 1)
	big := make([]any, 50_000)
	for i := range big {
		big[i] = float64(i)
	}
	doc, err := value.Marshal(big)
	require.NoError(t, err)
	blobs := blob.Map{}
	ref := blobs.Put(doc)
	payload, err := value.Marshal([]any{&value.Function{Source: `(big) => riot.waitUntilDone(riot.doWork((b) => b.length, big))`}, value.BlobRef(ref)})
	require.NoError(t, err)
	h := newHost(eng)
	h.blobs = blobs
	res, err := eng.Run(t.Context(), engine.Request{Spec: &workunit.Spec{Kind: workunit.Fn, Name: "t.js", Payload: payload}, Blobs: blobs, Host: h})
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, 50_000.0, v)
	require.Len(t, h.specs, 1)
	assert.Equal(t, []blob.Hash{ref}, h.specs[0].Blobs)
	assert.Less(t, len(h.specs[0].Payload), 1000, "the array goes as its blob, not inline")
}

// riot.with's options go with the children, retries too.
func TestChildren_Options(t *testing.T) {
	t.Parallel()
	eng := newEngine(t, 1)
	h := newHost(eng)
	payload, err := value.Marshal([]any{&value.Function{Source: `() => riot.waitUntilDone(
		riot.with({retries: 2, retryOn: [TypeError, 'RangeError'], timeout: '5s', noCache: true}).doWork(() => 1))`}})
	require.NoError(t, err)
	_, err = eng.Run(t.Context(), engine.Request{Spec: &workunit.Spec{Kind: workunit.Fn, Name: "t.js", Payload: payload}, Host: h})
	require.NoError(t, err)
	require.Len(t, h.opts, 1)
	assert.Equal(t, workunit.Options{Retries: 2, RetryOn: []string{"TypeError", "RangeError"}, Timeout: 5 * time.Second, NoCache: true}, h.opts[0])
}
