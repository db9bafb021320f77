package master

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaster_Window: a forWork, or a map, over more items than its
// window holds at most the window outstanding, submitting more as the
// script takes results (a map's on its event loop), and gives every
// result in order; the progress bar hears of all the items at once.
func TestMaster_Window(t *testing.T) {
	t.Parallel()
	for name, script := range map[string]string{
		"forWork": `const out = riot.forWork(Array.from({length: 50}, (_, i) => i), (x, i) => [x * x, i]);
			console.log(out.every(([sq, i], j) => i === j && sq === j * j), out.length);`,
		"map": `riot.map(Array.from({length: 50}, (_, i) => i), (x, i) => [x * x, i]).then((out) => {
				console.log(out.every(([sq, i], j) => i === j && sq === j * j), out.length);
			});`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ft := newFakeTracker(t, false)
			ft.forWorkWindow = 8
			sr := runScriptOn(t, ft, map[string]string{"main.js": script})
			require.NoError(t, sr.err)
			assert.Equal(t, "true 50\n", sr.stdout.String())
			ft.mu.Lock()
			assert.Equal(t, 50, ft.runs)
			assert.LessOrEqual(t, ft.maxOpen, 8, "at most the window outstanding")
			assert.Greater(t, ft.maxOpen, 1)
			ft.mu.Unlock()
			sr.events.mu.Lock()
			defer sr.events.mu.Unlock()
			assert.Equal(t, 50, sr.events.submitted)
			assert.Len(t, sr.events.finished, 50)
		})
	}
}

// TestMaster_Window_FailedItem_OthersStillRun: when an item fails, the
// items its window had not submitted yet are submitted before forWork
// throws (or map rejects, once the items before it are done), so that
// every item runs, as when all were submitted at once.
func TestMaster_Window_FailedItem_OthersStillRun(t *testing.T) {
	t.Parallel()
	const fn = `(x) => {
		if (x === 2) throw new RangeError('two');
		return x;
	}`
	for name, script := range map[string]string{
		"forWork": `try {
				riot.forWork(Array.from({length: 30}, (_, i) => i), ` + fn + `);
			} catch (e) {
				console.log(e.name, e.cause.name, e.cause.message);
			}`,
		"map": `riot.map(Array.from({length: 30}, (_, i) => i), ` + fn + `)
				.catch((e) => console.log(e.name, e.cause.name, e.cause.message));`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ft := newFakeTracker(t, false)
			ft.forWorkWindow = 4
			sr := runScriptOn(t, ft, map[string]string{"main.js": script})
			require.NoError(t, sr.err)
			assert.Equal(t, "WorkunitError RangeError two\n", sr.stdout.String())
			ft.mu.Lock()
			defer ft.mu.Unlock()
			assert.Equal(t, 30, ft.runs, "every item submitted")
		})
	}
}

// TestMaster_Interrupted_CountsWhatWasSubmitted: a forWork interrupted
// while its first window runs, or a map still pending when the script is
// interrupted, takes back from Events the items it never submitted: an
// interrupted job reports the workunits that stay with the tracker, not
// the ones the script never sent.
func TestMaster_Interrupted_CountsWhatWasSubmitted(t *testing.T) {
	t.Parallel()
	for name, script := range map[string]string{
		"forWork": `riot.forWork(Array.from({length: 30}, (_, i) => i), (x) => x);`,
		"map":     `riot.map(Array.from({length: 30}, (_, i) => i), (x) => x).then(console.log);`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ft := newFakeTracker(t, true) // nothing runs: the window stays full
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "main.js"), []byte(script), 0o644))
			conn, err := ft.connect(context.Background(), "localhost", 0, "")
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var events recordingEvents
			done := make(chan error, 1)
			go func() {
				done <- RunScript(ctx, ScriptOptions{Path: filepath.Join(dir, "main.js"), Conn: conn, Connect: ft.connect,
					Stdout: io.Discard, Stderr: io.Discard, Events: &events, ForWorkWindow: 4})
			}()
			for range 4 {
				<-ft.queue // the first window, submitted
			}
			cancel()
			require.Error(t, <-done)
			ft.mu.Lock()
			runs := ft.runs
			ft.mu.Unlock()
			events.mu.Lock()
			defer events.mu.Unlock()
			assert.Equal(t, 4, runs)
			assert.Equal(t, 4, events.submitted, "the 26 never submitted are taken back")
		})
	}
}
