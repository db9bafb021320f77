package worker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// pollute is what a hostile (or careless) master's workunit leaves behind
// in its realm: globals, polluted prototypes, replaced built-ins and a
// silenced console.
const pollute = `
globalThis.leak = 'secret of A';
Object.prototype.polluted = 'A was here';
Array.prototype.map = function () { return 'hijacked by A' };
String.prototype.toUpperCase = function () { return 'hijacked by A' };
JSON.stringify = function () { return 'hijacked by A' };
Math.random = function () { return 4 };
console.log = function () {};
Object.defineProperty(globalThis, 'trap', { get() { throw new Error('A trapped you') }, configurable: false });
'polluted'`

// probe reports what a workunit sees of the changes pollute makes.
const probe = `
console.log('B speaks');
({
	leak: typeof leak,
	polluted: ({}).polluted === undefined && !('polluted' in {}),
	map: [1, 2].map(x => x * 10).join(','),
	upper: 'b'.toUpperCase(),
	json: JSON.stringify({ b: 1 }),
	random: Math.random() < 1,
	trap: typeof globalThis.trap,
})`

// counter is a module whose top level keeps state: a realm's instance of
// it counts that realm's calls only.
var counter = &workunit.Module{Path: "/job/counter.js", Source: "let n = 0; exports.inc = (tag) => ++n;"}

// TestWorker_Isolation_TwoMasters: workunits of two masters on one worker
// with one slot never share a JavaScript realm: what the first leaves in
// globals, prototypes, built-ins, the console and a module's state does
// not reach the second. Within one master's realm it does (the control:
// the attack would work if the realms were shared).
func TestWorker_Isolation_TwoMasters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tokens bool
	}{{"sessions", false}, {"credentials", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const aTok, bTok, wTok = "alice-0123456789abcdef0123456789", "bob-0123456789abcdef0123456789ab", "worker-0123456789abcdef012345678"
			var opts []trackertest.Option
			var a, b client.Options
			var wo worker.Options
			if tc.tokens {
				opts = append(opts, trackertest.Tokens(
					tracker.Credential{Role: wire.RoleMaster, Token: aTok, Name: "alice"},
					tracker.Credential{Role: wire.RoleMaster, Token: bTok, Name: "bob"},
					tracker.Credential{Role: wire.RoleWorker, Token: wTok}))
				// The same session under other credentials: still apart.
				a = client.Options{Name: "a", Token: aTok, Session: "same-session"}
				b = client.Options{Name: "b", Token: bTok, Session: "same-session"}
				wo.Client.Token = wTok
			} else {
				a, b = client.Options{Name: "a"}, client.Options{Name: "b"}
			}
			tr := trackertest.Start(t, opts...)
			wo.Slots, wo.Prefetch = 1, -1 // one runtime goroutine: realms are the only wall
			start(t, tr.Addr(), wo)
			ma, mb := masterWith(t, tr.Addr(), a), masterWith(t, tr.Addr(), b)
			isolated(t, ma, mb)
		})
	}
}

func masterWith(t *testing.T, addr string, o client.Options) *client.Client {
	t.Helper()
	o.Logger = logger(t)
	c, err := client.Dial(ctxFor(t), addr, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// isolated runs the attack as a and the probe as b, then as a.
func isolated(t *testing.T, a, b *client.Client) {
	t.Helper()
	ctx := ctxFor(t)
	run := func(m *client.Client, spec *workunit.Spec) *workunit.Outcome {
		t.Helper()
		out, err := m.Submit(spec, workunit.Options{}).Wait(ctx)
		require.NoError(t, err)
		return out
	}
	valueOf := func(out *workunit.Outcome) any {
		t.Helper()
		v, err := out.Value()
		require.NoError(t, err)
		return v
	}
	modData, err := counter.MarshalBinary()
	require.NoError(t, err)
	call := func(m *client.Client, tag string) any {
		t.Helper()
		require.NoError(t, m.EnsureBlobs(ctx, map[blob.Hash][]byte{counter.Hash(): modData}))
		args, err := value.Marshal([]any{tag})
		require.NoError(t, err)
		return valueOf(run(m, &workunit.Spec{Kind: workunit.Call, Module: counter.Hash(), Export: "inc",
			Payload: args, Blobs: []blob.Hash{counter.Hash()}}))
	}

	assert.Equal(t, "polluted", valueOf(run(a, &workunit.Spec{Kind: workunit.Eval, Source: pollute, Name: "a.js"})))
	assert.Equal(t, 1.0, call(a, "a1"))
	assert.Equal(t, 2.0, call(a, "a2"))

	clean := map[string]any{"leak": "undefined", "polluted": true, "map": "10,20", "upper": "B",
		"json": `{"b":1}`, "random": true, "trap": "undefined"}
	out := run(b, &workunit.Spec{Kind: workunit.Eval, Source: probe, Name: "b.js"})
	assert.Equal(t, clean, valueOf(out), "b sees nothing of a's realm")
	assert.Equal(t, workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "B speaks"}}), out.Console)
	assert.Equal(t, 1.0, call(b, "b1"), "b's module instance is its own")

	// The control: a's own realm kept what a left (the same source under
	// another file name is another workunit, so it runs again).
	out = run(a, &workunit.Spec{Kind: workunit.Eval, Source: `typeof leak === 'string' ? leak : 'gone'`, Name: "a2.js"})
	assert.Equal(t, "secret of A", valueOf(out))
	assert.Equal(t, 3.0, call(a, "a3"))
	assert.Equal(t, 2.0, call(b, "b2"))
}
