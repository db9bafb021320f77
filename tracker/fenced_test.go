package tracker_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

// fencingStore is a store.Fencer that writes at once, until the test
// fences it.
type fencingStore struct {
	*fakeStore
	err atomic.Pointer[error]
}

func (f *fencingStore) Fenced() error {
	if e := f.err.Load(); e != nil {
		return *e
	}
	return nil
}

var _ store.Fencer = (*fencingStore)(nil)

// TestServer_StoreFencer_StopsBeforeItsNextWrite: once its store says
// another tracker writes it (a replica that lost the lead), the tracker
// sends nothing more, not even what needs no write (an info reply from
// its table), and stops.
func TestServer_StoreFencer_StopsBeforeItsNextWrite(t *testing.T) {
	t.Parallel()
	f := &fencingStore{fakeStore: newFakeStore()}
	f.answerAll()
	tr := trackertest.Start(t, trackertest.WithStore(f))
	m := master(t, tr, "m")
	key, _ := m.submit("fenced later")
	err := fmt.Errorf("fake replica: %w", store.ErrFenced)
	f.err.Store(&err)
	m.send(&wire.Info{Req: 77, Key: key})
	require.ErrorIs(t, tr.Ended(t), store.ErrFenced, "Run's error")
	select {
	case <-m.done:
	case <-time.After(waitLimit):
		t.Fatalf("the fenced tracker did not close the master's connection")
	}
	for msg := range m.in {
		_, isInfo := msg.(*wire.InfoReply)
		assert.False(t, isInfo, "an answer from a fenced tracker")
	}
	var ce *websocket.CloseError
	require.ErrorAs(t, m.readErr, &ce)
	assert.Equal(t, websocket.CloseGoingAway, ce.Code)
}
