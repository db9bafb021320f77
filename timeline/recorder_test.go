package timeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/timeline"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// TestRecorder: a Go master's Calls, tracked and waited for through a
// Recorder, through a real tracker and worker (the embedded default):
// each run is in the trace, on the worker's lane, lasting its Elapsed;
// a memoized one is an instant; a canceled one that never ran is too.
func TestRecorder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	quiet := slog.New(slog.DiscardHandler)
	emb, err := job.StartEmbedded(ctx, job.EmbeddedOptions{Workers: 2, Logger: quiet})
	require.NoError(t, err)
	defer emb.Stop()
	c, err := client.Dial(ctx, emb.Addr(), client.Options{Name: "go-master", Logger: quiet})
	require.NoError(t, err)
	defer c.Close()

	rec := timeline.New(timeline.Options{Job: "go-job"})
	spin := &value.Function{Source: "(ms) => { const end = Date.now() + ms; while (Date.now() < end) {} return ms; }"}
	var calls []*client.Call
	for _, ms := range []int{30, 1, 2} {
		k, err := c.DoWork(spin, ms)
		require.NoError(t, err)
		rec.Track(k)
		calls = append(calls, k)
	}
	outs := map[workunit.Key]*workunit.Outcome{}
	for _, k := range calls {
		out, err := rec.Wait(ctx, k)
		require.NoError(t, err)
		outs[k.Key] = out
	}
	again, err := c.DoWork(spin, 1) // done already: from memory
	require.NoError(t, err)
	rec.Track(again)
	_, err = rec.Wait(ctx, again)
	require.NoError(t, err)
	require.True(t, again.FromMemory())

	// Needs a GPU, which the local worker has not: waits until canceled.
	gpu := c.Submit(&workunit.Spec{Kind: workunit.Eval, Source: "1", Name: "gpu"}, workunit.Options{GPUs: 1})
	rec.Track(gpu)
	_, err = gpu.Accepted(ctx)
	require.NoError(t, err)
	_, err = c.Cancel(ctx, gpu.Key)
	require.NoError(t, err)
	_, err = rec.Wait(ctx, gpu)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	require.Equal(t, workunit.Canceled, werr.Kind)

	var buf bytes.Buffer
	_, err = rec.WriteTo(&buf)
	require.NoError(t, err)
	var tf struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			Ts            int64
			Dur           *int64
			Pid, Tid      int
			Args          map[string]any
		} `json:"traceEvents"`
		OtherData map[string]any `json:"otherData"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &tf), buf.String())
	procs := map[int]string{}
	for _, ev := range tf.TraceEvents {
		if ev.Name == "process_name" {
			procs[ev.Pid] = ev.Args["name"].(string)
		}
	}
	var runs, memo, noRun int
	for _, ev := range tf.TraceEvents {
		switch {
		case ev.Cat == "outcome" && ev.Tid == 2:
			noRun++
			assert.Equal(t, gpu.Key.String(), ev.Args["key"])
			assert.Equal(t, "error", ev.Args["status"])
			assert.Contains(t, ev.Args["error"], "canceled")
		case ev.Cat == "run":
			runs++
			key, err := workunit.ParseKey(ev.Args["key"].(string))
			require.NoError(t, err)
			out := outs[key]
			require.NotNil(t, out, "a run of a workunit not submitted")
			assert.Equal(t, out.Elapsed.Microseconds(), *ev.Dur)
			assert.Equal(t, out.Worker, procs[ev.Pid])
			assert.Equal(t, "local", out.Worker)
		case ev.Cat == "outcome":
			memo++
			assert.Equal(t, again.Key.String(), ev.Args["key"])
		}
	}
	assert.Equal(t, 3, runs)
	assert.Equal(t, 1, memo)
	assert.Equal(t, 1, noRun)
	assert.Equal(t, "go-job", procs[1])
	assert.EqualValues(t, 1, tf.OtherData["from_memory"])
}

// ExampleRecorder shows a Go master's timeline: Track each Call as it is
// submitted, Wait through the Recorder, and write the trace at the end.
func ExampleRecorder() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "localhost", client.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	rec := timeline.New(timeline.Options{Job: "squares"})
	var calls []*client.Call
	for i := range 10 {
		k, err := c.DoWork(&value.Function{Source: "(n) => n * n"}, i)
		if err != nil {
			fmt.Println(err)
			return
		}
		rec.Track(k)
		calls = append(calls, k)
	}
	for _, k := range calls {
		if _, err := rec.Wait(ctx, k); err != nil {
			fmt.Println(err)
		}
	}
	var trace bytes.Buffer // or an *os.File: open it in https://ui.perfetto.dev
	if _, err := rec.WriteTo(&trace); err != nil {
		fmt.Println(err)
	}
}
