package trackertest_test

import (
	"testing"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/stretchr/testify/assert"
)

func TestTracker_Lifecycle(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		var opts []trackertest.Option
		if durable {
			opts = append(opts, trackertest.Durable())
		}
		tr := trackertest.Start(t, opts...)
		addr := tr.Addr()
		assert.Regexp(t, `^127\.0\.0\.1:\d+$`, addr)
		assert.Equal(t, "ws://"+addr+"/riot", tr.URL())
		assert.Equal(t, durable, tr.DataDir() != "")
		st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Connections == 0 })
		assert.Zero(t, st.Workers)

		tr.Stop(t)
		assert.Nil(t, tr.Server())
		tr.Stop(t) // a no-op
		tr.Restart(t)
		assert.Equal(t, addr, tr.Addr())
		assert.NotNil(t, tr.Server())
		tr.Restart(t)
		assert.Zero(t, tr.Stats(t).Connections)
	}
}
