package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/job"
)

func TestInterruptedText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  job.InterruptedError
		f    evalFlags
		want string
	}{
		{job.InterruptedError{}, evalFlags{}, "interrupted"},
		{job.InterruptedError{Submitted: 4}, evalFlags{tracker: "alfred"}, "interrupted with 0 of 4 workunits unfinished"},
		{job.InterruptedError{Submitted: 10, Unfinished: 7}, evalFlags{tracker: "alfred:2355"},
			"interrupted with 7 of 10 workunits unfinished; they stay with the tracker at alfred:2355 and run on: run the job again to collect their results (with --cancel-on-interrupt, an interrupt cancels them instead)"},
		{job.InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 7}, evalFlags{tracker: "alfred", cancelInt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled them at the tracker at alfred"},
		{job.InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 5}, evalFlags{tracker: "alfred", cancelInt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled 5 of them at the tracker at alfred; 2 finished meanwhile"},
		// A rerun that joined the work an earlier, interrupted run left.
		{job.InterruptedError{Submitted: 1, Unfinished: 1, OtherRuns: 1}, evalFlags{tracker: "localhost", cancelInt: true},
			"interrupted with 1 of 1 workunit unfinished; canceled none of them at the tracker at localhost; " +
				"1 is another run's (an earlier, interrupted run of the job, whose work this one joined): " +
				"a run cancels only its own workunits, so it stays with the tracker and runs on"},
		{job.InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 2, OtherRuns: 3, Unchecked: 1}, evalFlags{tracker: "alfred", cancelInt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled 2 of them at the tracker at alfred; " +
				"3 are another run's (an earlier, interrupted run of the job, whose work this one joined): " +
				"a run cancels only its own workunits, so they stay with the tracker and run on; " +
				"1 more could not be canceled by this run (another run's, or finished meanwhile); 1 finished meanwhile"},
		{job.InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 5, Unchecked: 2, CancelErr: errors.New("client: cancel: context deadline exceeded")},
			evalFlags{tracker: "alfred", cancelInt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled 5 of them at the tracker at alfred; could not cancel the rest: client: cancel: context deadline exceeded"},
		{job.InterruptedError{Submitted: 10, Unfinished: 7}, evalFlags{data: "state"},
			"interrupted with 7 of 10 workunits unfinished; what finished is kept in state: run the job again with --data state to pick up where it left off"},
		{job.InterruptedError{Submitted: 10, Unfinished: 7}, evalFlags{},
			"interrupted with 7 of 10 workunits unfinished; the embedded tracker kept nothing (with --data DIR, a rerun picks up where the last one left off)"},
	} {
		assert.Equal(t, tt.want, interruptedText(&tt.err, &tt.f))
	}
}
