package master

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaster_ForWork_Window: a forWork over more items than its window
// holds at most the window outstanding, submitting more as the script
// takes results, and gives every result in order; the progress bar hears
// of all the items at once.
func TestMaster_ForWork_Window(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t, false)
	ft.forWorkWindow = 8
	sr := runScriptOn(t, ft, map[string]string{"main.js": `
		const out = riot.forWork(Array.from({length: 50}, (_, i) => i), (x, i) => [x * x, i]);
		console.log(out.every(([sq, i], j) => i === j && sq === j * j), out.length);
	`})
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
}

// TestMaster_ForWork_FailedItem_OthersStillRun: when an item fails, the
// items its window had not submitted yet are submitted before forWork
// throws, so that every item runs, as when all were submitted at once.
func TestMaster_ForWork_FailedItem_OthersStillRun(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t, false)
	ft.forWorkWindow = 4
	sr := runScriptOn(t, ft, map[string]string{"main.js": `
		try {
			riot.forWork(Array.from({length: 30}, (_, i) => i), (x) => {
				if (x === 2) throw new RangeError('two');
				return x;
			});
		} catch (e) {
			console.log(e.name, e.cause.name, e.cause.message);
		}
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "WorkunitError RangeError two\n", sr.stdout.String())
	ft.mu.Lock()
	defer ft.mu.Unlock()
	assert.Equal(t, 30, ft.runs, "every item submitted")
}
