package tracker_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// TestServer_ResultFromStore: with a durable store and no value cache
// (ValueCache negative), the table keeps no finished result, and every
// answer reads it back from the store file: the memoized answer of a
// submission, a watch of the finished key, a GetInfo and the API's page.
func TestServer_ResultFromStore(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(), trackertest.WithOptions(func(o *tracker.Options) { o.ValueCache = -1 }))
	m := master(t, tr, "m")
	k, _ := m.submit("done")
	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), result(7))
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 1 })

	rec, ok := tr.Lookup(t, k)
	require.True(t, ok)
	assert.True(t, rec.Stored, "the table let go of the written result")
	assert.Nil(t, rec.Result)

	m2 := master(t, tr, "m2")
	_, acc := m2.submit("done")
	assert.Equal(t, workunit.StatusDone, acc.Status)
	assert.Equal(t, result(7), acc.Result, "a memoized answer reads the result from the store")

	m3 := master(t, tr, "m3")
	m3.send(&wire.Watch{Req: 50, Keys: []workunit.Key{k}})
	fin := recv[*wire.Finished](m3)
	assert.Equal(t, uint64(50), fin.Req)
	assert.Equal(t, result(7), fin.Result, "a watch of a finished key reads the result from the store")

	m3.send(&wire.Info{Req: 51, Key: k})
	info := recv[*wire.InfoReply](m3)
	assert.Equal(t, result(7), info.Result)

	var det tracker.WorkunitDetail
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", "http://"+tr.Addr()+"/api/v1/workunits/"+k.String(), nil, &det))
	require.NotNil(t, det.Result, "the API page reads the result from the store")
	assert.Equal(t, 1, det.Result.Bytes)
}
