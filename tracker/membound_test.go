package tracker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// padded returns the source of a workunit of about 1000 bytes, told apart
// by tag.
func padded(tag string) string { return "'" + tag + strings.Repeat("x", 1000) + "'" }

// refusedMemory submits src through c and checks that the tracker refuses
// it with memory-full, naming the bound, and stores nothing of it; it
// returns the Error's message.
func refusedMemory(t *testing.T, tr *trackertest.Tracker, c *wsClient, src string) string {
	t.Helper()
	s, key := spec(t, src)
	req := c.nextReq()
	c.send(&wire.Submit{Req: req, Spec: s, Watch: true})
	e := recv[*wire.Error](c)
	assert.Equal(t, wire.CodeMemoryFull, e.Code, e.Message)
	assert.ErrorIs(t, e, wire.ErrMemoryFull)
	assert.Equal(t, req, e.Req)
	assert.Contains(t, e.Message, "tracker: memory full: workunit "+key.Short()+" refused")
	assert.Contains(t, e.Message, "past its --max-memory of 1536 bytes (1.5 KiB)")
	assert.Contains(t, e.Message, "Nothing already accepted is dropped")
	_, ok := tr.Lookup(t, key)
	assert.False(t, ok, "refused: not stored")
	return e.Message
}

// TestServer_MaxMemory: past MaxMemory a new workunit is refused with
// memory-full and a message that says what is full and what to do, and
// leaves no trace; the connection stays open; a submission that joins open
// work or is answered from a kept result is served; the result of accepted
// work is taken; once the table holds less, new work is accepted again.
func TestServer_MaxMemory(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxMemory = 1536 }))
	m := master(t, tr, "m")
	kA, _ := m.submit(padded("a"))
	msg := refusedMemory(t, tr, m, padded("b"))
	assert.Contains(t, msg, "run riotd with --data", "in memory, the message suggests a durable store")
	assert.Contains(t, msg, "for 1 workunit (records,")
	st := tr.Stats(t)
	assert.Equal(t, uint64(1), st.Submitted, "the refusal is not counted as a submission")
	assert.Equal(t, uint64(1), st.RefusedMemory)
	assert.Equal(t, 1, st.Watches, "the refused submission's watch is not kept")
	assert.Equal(t, 1, st.Waiting)
	assert.True(t, st.Bytes > 1000 && st.Bytes <= 1536, "held %d", st.Bytes)
	status, err := tr.Server().Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, st.Bytes, status.HeldBytes)
	assert.Equal(t, int64(1536), status.MaxMemoryBytes)
	assert.Equal(t, uint64(1), status.RefusedMemory)
	text, _ := get(t, "http://"+tr.Addr()+"/")
	assert.Contains(t, text, "memory for workunits: ")
	assert.Contains(t, text, " held of --max-memory 1536 bytes (1.5 KiB); 1 submissions refused")
	metrics, _ := get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, metrics, fmt.Sprintf("riot_held_bytes %d\n", st.Bytes))
	assert.Contains(t, metrics, "riot_submissions_refused_memory_total 1\n")

	other := master(t, tr, "other")
	_, acc := other.submit(padded("a")) // joins the waiting one
	assert.Equal(t, workunit.StatusWaiting, acc.Status)

	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	require.Equal(t, kA, a.Key)
	w.complete(a, result(1), &wire.Credit{N: 1})
	assert.Equal(t, result(1), recv[*wire.Finished](m).Result)
	assert.Equal(t, result(1), recv[*wire.Finished](other).Result)

	// The spec went with the run: room for b now, and then full again.
	kB, _ := m.submit(padded("b"))
	assert.Equal(t, kB, recv[*wire.Assign](w).Key)
	refusedMemory(t, tr, m, padded("c"))
	_, acc = other.submit(padded("a")) // answered from the kept result
	assert.Equal(t, workunit.StatusDone, acc.Status)
	assert.Equal(t, result(1), acc.Result)
}

// TestServer_MaxMemory_Durable: with a durable store, a result written to
// it no longer counts (the store has it; the value cache is bounded
// apart), and the refusal does not suggest --data.
func TestServer_MaxMemory_Durable(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(), trackertest.WithOptions(func(o *tracker.Options) { o.MaxMemory = 1536 }))
	m := master(t, tr, "m")
	m.submit(padded("a"))
	msg := refusedMemory(t, tr, m, padded("b"))
	assert.NotContains(t, msg, "--data")

	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), []byte(padded("result")), &wire.Credit{N: 1})
	recv[*wire.Finished](m)
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Bytes == 160 })
	assert.Equal(t, int64(160), st.Bytes, "only the record: its result is in the store")
	m.submit(padded("b"))
}

// TestServer_MaxMemory_Child: a running workunit's child past MaxMemory is
// refused to its worker with memory-full and the same message, not
// stored; the parent keeps its lease and finishes.
func TestServer_MaxMemory_Child(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxMemory = 1536 }))
	m := master(t, tr, "m")
	parent, _ := m.submit(padded("parent"))
	w := worker(t, tr, "w", 1)
	pa := recv[*wire.Assign](w)
	require.Equal(t, parent, pa.Key)

	child, childKey := spec(t, padded("child"))
	w.send(&wire.Child{Req: 9, Parent: pa.Key, Token: pa.Token, Spec: child, Watch: true})
	e := recv[*wire.Error](w)
	assert.Equal(t, uint64(9), e.Req)
	assert.Equal(t, wire.CodeMemoryFull, e.Code, e.Message)
	assert.Contains(t, e.Message, "tracker: memory full: workunit "+childKey.Short()+" refused")
	assert.Contains(t, e.Message, "past its --max-memory of 1536 bytes (1.5 KiB)")
	_, ok := tr.Lookup(t, childKey)
	assert.False(t, ok, "refused: not stored")

	w.complete(pa, result(4))
	assert.Equal(t, result(4), recv[*wire.Finished](m).Result)
}
