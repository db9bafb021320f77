package job

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeBusy is a fake of the tracker's status, for the UI's tests.
type fakeBusy struct {
	busy, slots int
	ok          bool
}

func (f *fakeBusy) get() (int, int, bool) { return f.busy, f.slots, f.ok }

func TestUI_BarSaysWhenNoWorkerIsConnected(t *testing.T) {
	f := &fakeBusy{}
	u := &jobUI{width: 10, total: 4, busy: f.get}
	now := time.Now()
	assert.NotContains(t, u.lineLocked(now), "slots busy", "the tracker could not say")
	assert.NotContains(t, u.lineLocked(now), "no workers")
	f.ok = true
	assert.Contains(t, u.lineLocked(now), "no workers connected")
	f.busy, f.slots = 1, 4
	assert.Contains(t, u.lineLocked(now), "1/4 slots busy")
}

// Without a bar, work that waits with no worker connected is said once,
// after noWorkersHintAfter, and not while a worker is connected.
func TestUI_HintWhenNoWorkerIsConnected(t *testing.T) {
	f := &fakeBusy{ok: true, slots: 2}
	var out bytes.Buffer
	u := &jobUI{w: &out, hint: "tracker.example:2355", total: 3, done: 1, busy: f.get}
	t0 := time.Now()
	u.checkIdle(t0)
	u.checkIdle(t0.Add(time.Minute))
	assert.Empty(t, out.String(), "a worker is connected")

	f.slots = 0
	u.checkIdle(t0.Add(2 * time.Minute))
	u.checkIdle(t0.Add(2*time.Minute + noWorkersHintAfter - time.Millisecond))
	assert.Empty(t, out.String(), "not yet")
	u.checkIdle(t0.Add(2*time.Minute + noWorkersHintAfter))
	assert.Equal(t, "riot: 2 workunits wait and no worker is connected to the tracker; start one with: riot-worker tracker.example:2355\n",
		out.String())
	u.checkIdle(t0.Add(time.Hour))
	assert.Equal(t, 1, bytes.Count(out.Bytes(), []byte("riot:")), "said once")
}

func TestUI_NoHintWhenNothingWaits(t *testing.T) {
	f := &fakeBusy{ok: true}
	var out bytes.Buffer
	u := &jobUI{w: &out, hint: "tracker.example:2355", total: 3, done: 3, busy: f.get}
	t0 := time.Now()
	u.checkIdle(t0)
	u.checkIdle(t0.Add(time.Hour))
	assert.Empty(t, out.String())
}
