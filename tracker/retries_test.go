package tracker_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// TestServer_Retries: a submit's retries travel to the table: the
// worker's failed attempt is run again and the master hears nothing of
// it; the workunit's page lists the attempt meanwhile; the last failure
// reaches the master with both attempts, and the page shows them.
func TestServer_Retries(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	base := "http://" + tr.Addr()
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "laptop"})
	key, _ := m.submit("null.x", func(s *wire.Submit) { s.Options.Retries, s.Options.RetryOn = 1, []string{"TypeError"} })
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "alfred", Slots: 1})
	w.send(&wire.Credit{N: 1})
	fail := func(a *wire.Assign, msg string) {
		w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: msg}},
			&wire.Credit{N: 1})
	}
	a := recv[*wire.Assign](w)
	require.Equal(t, key, a.Key)
	fail(a, "first")
	again := recv[*wire.Assign](w)
	require.Equal(t, key, again.Key, "run again")
	assert.NotEqual(t, a.Token, again.Token)

	var det tracker.WorkunitDetail
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+key.String(), nil, &det))
	assert.Equal(t, "running", det.Status)
	assert.Equal(t, 1, det.Options.Retries)
	assert.Equal(t, []string{"TypeError"}, det.Options.RetryOn)
	assert.Equal(t, []tracker.AttemptDoc{{Worker: "alfred", Name: "TypeError", Message: "first"}}, det.FailedAttempts)

	fail(again, "second")
	fin := recv[*wire.Finished](m)
	require.NotNil(t, fin.Err)
	assert.Equal(t, []workunit.Attempt{{Worker: "alfred", Name: "TypeError", Message: "first"}, {Worker: "alfred", Name: "TypeError", Message: "second"}}, fin.Err.Attempts)
	det = tracker.WorkunitDetail{}
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+key.String(), nil, &det))
	require.NotNil(t, det.Error)
	assert.Len(t, det.Error.Attempts, 2)
	assert.Empty(t, det.FailedAttempts)
}

// retryFailed is a durable tracker on a fake store, a worker with one
// slot and a master, and a workunit that may be retried once on a
// TypeError: submitted, written, assigned, and failed by the worker with
// its credit back, the failed attempt's write in flight (returned).
type retryFailed struct {
	f    *fakeStore
	w, m *wsClient
	key  workunit.Key
	a    *wire.Assign // the first lease
}

// failOnce makes a retryFailed.
func failOnce(t *testing.T) retryFailed {
	t.Helper()
	tr, f := startWithFake(t)
	rf := retryFailed{f: f, w: worker(t, tr, "alfred", 1), m: master(t, tr, "m")}
	s, key := spec(t, "null.x")
	rf.key = key
	rf.m.send(&wire.Submit{Req: 1, Spec: s, Options: workunit.Options{Retries: 1, RetryOn: []string{"TypeError"}}})
	f.nextApply(t)
	f.answer <- nil
	assert.Equal(t, uint64(1), recv[*wire.Accepted](rf.m).Req)
	// As the submission is written, or after it when the worker's credit
	// came later (TestServer_Assign_WhileSubmissionWritten has the first).
	rf.a = recv[*wire.Assign](rf.w)
	require.Equal(t, key, rf.a.Key)
	rf.w.send(&wire.Failed{Key: rf.a.Key, Token: rf.a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "first"}},
		&wire.Credit{N: 1})
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	require.Equal(t, key, batch[0].Key)
	require.Len(t, batch[0].Attempts, 1, "the failed attempt's write")
	return rf
}

// TestServer_Retry_WaitsForFailureWrite: a durable tracker sends a
// workunit's first assignment as its submission is written, but a retry
// only once the failed attempt's record is on disk. Sent early, the
// retry could be running while the failure was not yet written, and a
// tracker stopped then counted that attempt again after its restart: one
// retry more than the submission allowed (TestE2E_RetriesSurviveRestart
// waited for ever on it).
func TestServer_Retry_WaitsForFailureWrite(t *testing.T) {
	t.Parallel()
	rf := failOnce(t)
	assert.Empty(t, rf.w.barrier(), "no retry before the failed attempt is written")
	rf.f.answer <- nil
	again := recv[*wire.Assign](rf.w)
	assert.Equal(t, rf.key, again.Key, "the retry, once the failure is written")
	assert.NotEqual(t, rf.a.Token, again.Token)
}

// TestServer_Reassign_WaitsForLossWrite: a lease given again after its
// worker was lost waits, as a retry does, for the write that records the
// loss.
func TestServer_Reassign_WaitsForLossWrite(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	w1 := worker(t, tr, "w1", 1)
	m := master(t, tr, "m")
	s, key := spec(t, "long")
	m.send(&wire.Submit{Req: 1, Spec: s})
	f.nextApply(t)
	f.answer <- nil
	recv[*wire.Accepted](m)
	require.Equal(t, key, recv[*wire.Assign](w1).Key)

	w2 := worker(t, tr, "w2", 1)
	w1.ws.Close()
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	require.Equal(t, key, batch[0].Key)
	assert.Empty(t, w2.barrier(), "no second lease before the loss is written")
	f.answer <- nil
	assert.Equal(t, key, recv[*wire.Assign](w2).Key)
}

// TestServer_Retry_HeldWhileFailureWriteFails: when the write of a failed
// attempt fails, its retry is not sent either; it goes out once the table
// has written the records again.
func TestServer_Retry_HeldWhileFailureWriteFails(t *testing.T) {
	t.Parallel()
	rf := failOnce(t)
	rf.f.answer <- errors.New("fake: disk full")
	assert.Empty(t, rf.w.barrier(), "no retry while the failure is on no disk")
	batch := rf.f.nextApply(t) // written again, after the back-off
	require.Len(t, batch, 1)
	require.Len(t, batch[0].Attempts, 1)
	assert.Empty(t, rf.w.barrier(), "nor while it is written again")
	rf.f.answer <- nil
	again := recv[*wire.Assign](rf.w)
	assert.Equal(t, rf.key, again.Key)
	assert.NotEqual(t, rf.a.Token, again.Token)
}

// TestServer_Retry_HeldThenCanceled: a retry held since its failure's
// write failed, whose workunit is canceled before the records are written
// again, is not sent: the worker would be told at once to stop it.
func TestServer_Retry_HeldThenCanceled(t *testing.T) {
	t.Parallel()
	rf := failOnce(t)
	rf.f.answer <- errors.New("fake: disk full")
	rf.m.send(&wire.Cancel{Req: 2, Keys: []workunit.Key{rf.key}}) // within the write's back-off, mostly
	batch := rf.f.nextApply(t)
	require.Len(t, batch, 1)
	if batch[0].Status != workunit.StatusError {
		// The rewrite's Ready was taken before the cancel (a back-off of
		// 50 ms, and a slow machine): its Revoke comes in the next one.
		rf.f.answerAll()
		return
	}
	rf.f.answer <- nil
	for _, msg := range rf.w.barrier() {
		if as, ok := msg.(*wire.Assign); ok {
			t.Fatalf("the worker got the canceled retry %s", as.Key.Short())
		}
	}
	rf.f.answerAll()
}
