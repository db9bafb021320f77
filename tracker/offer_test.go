package tracker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// A console line offered to a master whose queue is full is not queued,
// and the connection stays: lines are what a slow master loses, never
// its connection nor the tracker's memory.
func TestConn_OfferKeepsTheConnection(t *testing.T) {
	c := &conn{s: &Server{opts: Options{QueueBytes: 1 << 20}}, state: qOpen}
	line := &wire.Printed{Worker: "w", Lines: []wire.Line{{Level: workunit.LevelLog, Text: strings.Repeat("x", 1000)}}}
	most := 10 << 10
	n := 0
	for c.offer(line, most) {
		n++
		if n > 100 {
			t.Fatal("offer took more than its bound")
		}
	}
	assert.Equal(t, most/msgBytes(line), n)
	assert.LessOrEqual(t, c.qbytes, most)
	assert.Equal(t, qOpen, c.state, "the connection stays")
	assert.True(t, c.push(&wire.Credit{N: 1}), "other messages still go")
}
