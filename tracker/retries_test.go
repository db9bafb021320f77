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

// TestServer_Retry_WaitsForFailureWrite: a durable tracker sends a
// workunit's first assignment as its submission is written, but a retry
// only once the failed attempt's record is on disk. Sent early, the
// retry could be running while the failure was not yet written, and a
// tracker stopped then counted that attempt again after its restart: one
// retry more than the submission allowed (TestE2E_RetriesSurviveRestart
// waited for ever on it).
func TestServer_Retry_WaitsForFailureWrite(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	w := worker(t, tr, "alfred", 1)
	m := master(t, tr, "m")
	s, key := spec(t, "null.x")
	m.send(&wire.Submit{Req: 1, Spec: s, Options: workunit.Options{Retries: 1, RetryOn: []string{"TypeError"}}})
	f.nextApply(t)
	f.answer <- nil
	assert.Equal(t, uint64(1), recv[*wire.Accepted](m).Req)
	// As the submission is written, or after it when the worker's credit
	// came later (TestServer_Assign_WhileSubmissionWritten has the first).
	a := recv[*wire.Assign](w)
	require.Equal(t, key, a.Key)

	w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "first"}},
		&wire.Credit{N: 1})
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	require.Equal(t, key, batch[0].Key)
	require.Len(t, batch[0].Attempts, 1, "the failed attempt's write")
	assert.Empty(t, w.barrier(), "no retry before the failed attempt is written")
	f.answer <- nil
	again := recv[*wire.Assign](w)
	assert.Equal(t, key, again.Key, "the retry, once the failure is written")
	assert.NotEqual(t, a.Token, again.Token)
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
	tr, f := startWithFake(t)
	w := worker(t, tr, "alfred", 1)
	m := master(t, tr, "m")
	s, key := spec(t, "null.x")
	m.send(&wire.Submit{Req: 1, Spec: s, Options: workunit.Options{Retries: 1, RetryOn: []string{"TypeError"}}})
	f.nextApply(t)
	f.answer <- nil
	recv[*wire.Accepted](m)
	a := recv[*wire.Assign](w)

	w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "first"}},
		&wire.Credit{N: 1})
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	require.Len(t, batch[0].Attempts, 1)
	f.answer <- errors.New("fake: disk full")
	assert.Empty(t, w.barrier(), "no retry while the failure is on no disk")
	batch = f.nextApply(t) // written again, after the back-off
	require.Len(t, batch, 1)
	require.Len(t, batch[0].Attempts, 1)
	assert.Empty(t, w.barrier(), "nor while it is written again")
	f.answer <- nil
	again := recv[*wire.Assign](w)
	assert.Equal(t, key, again.Key)
	assert.NotEqual(t, a.Token, again.Token)
}

// TestServer_Retry_HeldThenCanceled: a retry held since its failure's
// write failed, whose workunit is canceled before the records are written
// again, is not sent: the worker would be told at once to stop it.
func TestServer_Retry_HeldThenCanceled(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	w := worker(t, tr, "alfred", 1)
	m := master(t, tr, "m")
	s, key := spec(t, "null.x")
	m.send(&wire.Submit{Req: 1, Spec: s, Options: workunit.Options{Retries: 1, RetryOn: []string{"TypeError"}}})
	f.nextApply(t)
	f.answer <- nil
	recv[*wire.Accepted](m)
	a := recv[*wire.Assign](w)
	w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "first"}},
		&wire.Credit{N: 1})
	f.nextApply(t)
	f.answer <- errors.New("fake: disk full")
	m.send(&wire.Cancel{Req: 2, Keys: []workunit.Key{key}}) // within the write's back-off, mostly
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	if batch[0].Status != workunit.StatusError {
		// The rewrite's Ready was taken before the cancel (a back-off of
		// 50 ms, and a slow machine): its Revoke comes in the next one.
		f.answerAll()
		return
	}
	f.answer <- nil
	for _, msg := range w.barrier() {
		if as, ok := msg.(*wire.Assign); ok {
			t.Fatalf("the worker got the canceled retry %s", as.Key.Short())
		}
	}
	f.answerAll()
}
