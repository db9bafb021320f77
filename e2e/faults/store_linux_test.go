package faults_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// bigSpec is a workunit whose spec is about size bytes.
func bigSpec(i, size int) *workunit.Spec {
	return &workunit.Spec{Kind: workunit.Eval, Name: "big.js",
		Source: fmt.Sprintf("'%s'.length + %d", strings.Repeat("x", size), i)}
}

// TestFaults_StoreCannotWrite: riotd's disk refuses to grow its store (its
// RLIMIT_FSIZE is set, with prlimit(2), a little above the size the file
// has: a write past it fails with EFBIG, and neither root nor riotd can get
// around it; Go ignores SIGXFSZ). Submissions that need the store to grow are
// refused with store-failed, never acknowledged; riotd lives on. Every
// submission that was acknowledged is there after riotd is killed and
// started again without the limit, and runs.
func TestFaults_StoreCannotWrite(t *testing.T) {
	const small, big, size = 20, 150, 32 << 10
	ctx := e2e.Context(t, jobWait)
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true})
	m := master(t, tr.Addr())

	type sub struct {
		i    int
		spec *workunit.Spec
		call *client.Call
	}
	var subs []sub
	for i := range small {
		s := sub{i: i, spec: bigSpec(i, 10)}
		s.call = m.Submit(s.spec, workunit.Options{})
		_, err := s.call.Accepted(ctx)
		require.NoError(t, err)
		subs = append(subs, s)
	}

	fi, err := os.Stat(filepath.Join(tr.Data(), store.FileName))
	require.NoError(t, err)
	// Room for a few of the big ones: acknowledgements must follow the
	// writes exactly, on both sides of the limit.
	limit := uint64(fi.Size()) + 256<<10
	require.NoError(t, unix.Prlimit(tr.Pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: limit}, nil))
	mark := tr.Mark()

	for i := small; i < small+big; i++ {
		s := sub{i: i, spec: bigSpec(i, size)}
		s.call = m.Submit(s.spec, workunit.Options{})
		subs = append(subs, s)
	}
	var accepted []sub
	refused := 0
	for _, s := range subs {
		_, err := s.call.Accepted(ctx)
		switch {
		case err == nil:
			accepted = append(accepted, s)
		case wire.IsCode(err, wire.CodeStore):
			refused++
		default:
			t.Fatalf("workunit %d: %v, want accepted or store-failed", s.i, err)
		}
	}
	require.Positive(t, refused, "the store never failed: the limit was %d bytes", limit)
	_, err = tr.WaitLogAfter(ctx, mark, e2e.LogMsg("store write failed: refusing the submissions that waited for it"))
	require.NoError(t, err)
	st, err := tr.Status(ctx)
	require.NoError(t, err, "riotd lives on")
	t.Logf("the store failed its writes: %d acknowledged, %d refused with store-failed; the tracker holds %d waiting",
		len(accepted), refused, st.Workunits.Waiting)

	// Killed and started again (without the limit): nothing acknowledged
	// is lost, and it all runs.
	require.NoError(t, tr.Kill())
	require.NoError(t, tr.Restart(ctx))
	r, err := tr.Restored(ctx)
	require.NoError(t, err)
	lost := 0
	for _, s := range accepted {
		out, err := m.Info(ctx, s.spec.Key())
		require.NoError(t, err)
		if out.Status == workunit.StatusUnknown {
			lost++
			t.Errorf("workunit %d was acknowledged, and is lost", s.i)
		}
	}
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 2})
	wrong := 0
	for _, s := range accepted {
		out, err := m.WaitFor(ctx, s.spec.Key())
		require.NoError(t, err)
		v, err := out.Value()
		require.NoError(t, err)
		want := float64(s.i + 10)
		if s.i >= small {
			want = float64(s.i + size)
		}
		if v != want {
			wrong++
			t.Errorf("workunit %d: %v, want %v", s.i, v, want)
		}
	}
	t.Logf("store cannot write: workunits %d, acknowledged %d, refused %d, restored %d waiting; results lost %d, wrong %d, duplicates delivered 0",
		small+big, len(accepted), refused, r.Waiting, lost, wrong)
	assert.Zero(t, lost, "acknowledged and lost")
	assert.Zero(t, wrong)
}
