package tracker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// TestServer_Auth_ChildWithinLease: a worker submits a child only within
// a lease it holds, and the child is the parent's submitter's: its memo
// scope (alice's submission of the same work is answered from memory, bob's
// is not) and its realm. Another worker, and a master's token, are
// refused.
func TestServer_Auth_ChildWithinLease(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	alice := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "alice", Token: aliceTok})
	bob := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "bob", Token: bobTok})
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: workerTok, Slots: 1})
	other := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "other", Token: workerTok, Slots: 1})

	parentKey, _ := alice.submit("1")
	w.send(&wire.Credit{N: 1})
	pa := recv[*wire.Assign](w)
	require.Equal(t, parentKey, pa.Key)

	child, childKey := spec(t, "2")
	// Not within the lease: another worker's, a master's, a wrong token.
	other.send(&wire.Child{Req: 1, Parent: pa.Key, Token: pa.Token, Spec: child, Watch: true})
	e := recv[*wire.Error](other)
	assert.Equal(t, wire.CodeForbidden, e.Code)
	assert.Contains(t, e.Message, "the worker holds no such lease; a workunit submits children only while it runs, from the worker that holds its lease")
	alice.send(&wire.Child{Req: 2, Parent: pa.Key, Token: pa.Token, Spec: child, Watch: true})
	e = recv[*wire.Error](alice)
	assert.Equal(t, wire.CodeForbidden, e.Code)
	assert.Contains(t, e.Message, "a master's token may submit work, not submit the children of a running workunit")
	w.send(&wire.Child{Req: 3, Parent: pa.Key, Token: pa.Token + 1, Spec: child, Watch: true})
	e = recv[*wire.Error](w)
	assert.Equal(t, uint64(3), e.Req)
	assert.Equal(t, wire.CodeForbidden, e.Code)

	// Within it: accepted, then run in the parent's realm, while the
	// parent waits outside the window of one slot.
	w.send(&wire.Child{Req: 4, Parent: pa.Key, Token: pa.Token, Spec: child, Watch: true})
	acc := recv[*wire.Accepted](w)
	assert.Equal(t, uint64(4), acc.Req)
	assert.Equal(t, childKey, acc.Key)
	assert.Equal(t, workunit.StatusWaiting, acc.Status)
	w.send(&wire.Wait{Key: pa.Key, Token: pa.Token, Waiting: true}, &wire.Credit{N: 1})
	ca := recv[*wire.Assign](w)
	assert.Equal(t, childKey, ca.Key)
	assert.Equal(t, pa.Realm, ca.Realm, "the child runs in its parent's realm")
	w.complete(ca, result(2), &wire.Credit{N: 1})
	fin := recv[*wire.Finished](w)
	assert.Equal(t, uint64(4), fin.Req)
	assert.Equal(t, result(2), fin.Result)

	// Alice's scope has it; bob's does not.
	b, _ := spec(t, "2")
	alice.send(&wire.Submit{Req: 10, Spec: b})
	assert.Equal(t, workunit.StatusDone, recv[*wire.Accepted](alice).Status, "memoized in the parent's submitter's scope")
	bob.send(&wire.Submit{Req: 11, Spec: b})
	assert.Equal(t, workunit.StatusWaiting, recv[*wire.Accepted](bob).Status, "another credential's is another workunit")

	w.send(&wire.Wait{Key: pa.Key, Token: pa.Token, Waiting: false})
	w.complete(pa, result(3))
	assert.Equal(t, result(3), recv[*wire.Finished](alice).Result)
}
