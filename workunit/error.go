package workunit

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrorKind says why a workunit failed.
type ErrorKind uint8

// Why a workunit failed. The numbers travel on the wire; do not reorder.
const (
	// Thrown: the workunit's code threw (Name, Message and Stack are the
	// thrown error's).
	Thrown ErrorKind = 1
	// TimeLimit: it ran past its time limit and was interrupted.
	TimeLimit ErrorKind = 2
	// StackLimit: it passed the call-stack depth limit.
	StackLimit ErrorKind = 3
	// MemoryLimit: the worker's heap passed its limit while it ran.
	MemoryLimit ErrorKind = 4
	// ResultLimit: its result or console output was larger than allowed.
	ResultLimit ErrorKind = 5
	// Unsendable: its result holds something that cannot be sent (a
	// function, a symbol, a host object).
	Unsendable ErrorKind = 6
	// Invalid: the workunit itself is malformed: an unknown kind, a
	// missing module or export, a payload that does not decode.
	Invalid ErrorKind = 7
	// WorkersLost: the workers that took it were lost too many times.
	WorkersLost ErrorKind = 8
	// Canceled: its evaluation was canceled by its caller.
	Canceled ErrorKind = 9
	// Internal: riot itself failed; a bug to report.
	Internal ErrorKind = 10
)

var kindNames = map[ErrorKind]string{
	Thrown:      "thrown",
	TimeLimit:   "time-limit",
	StackLimit:  "stack-limit",
	MemoryLimit: "memory-limit",
	ResultLimit: "result-limit",
	Unsendable:  "unsendable",
	Invalid:     "invalid",
	WorkersLost: "workers-lost",
	Canceled:    "canceled",
	Internal:    "internal",
}

// String returns the kind's name, such as "time-limit".
func (k ErrorKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// Error is a failed workunit. The engine gives one for a workunit that
// failed while it evaluated it; the tracker adds the worker's name and the
// key; masters receive it from the client. Use errors.As to get it.
type Error struct {
	Kind ErrorKind
	// Name, Message and Stack are the JavaScript error's: for a thrown
	// TypeError, "TypeError", its message, and its stack with line numbers
	// in the workunit's source. Limit errors have names too (TimeoutError,
	// RangeError, ...) so that every Error reads as "Name: message".
	Name    string
	Message string
	Stack   string
	// Value is the thrown value, encoded, when it was not an Error object
	// (throw 42, throw {code: 7}) and could be encoded; else nil.
	Value []byte
	// Worker is the name of the worker that ran the workunit, when known.
	Worker string
	// Key is the workunit's key, when known.
	Key Key
	// Attempts are the workunit's failed attempts, in order, this one
	// last, when it was submitted with retries (Options.Retries); nil
	// otherwise.
	Attempts []Attempt
}

// Attempt is one failed attempt of a workunit run with retries: the
// worker that ran it and its error's name and message.
type Attempt struct {
	Worker  string
	Name    string
	Message string
}

// MaxAttemptMessage bounds the bytes of an Attempt's message: a workunit
// has up to MaxRetries+1 attempts, and they travel together, in its
// error. The error itself keeps the last attempt's whole message.
const MaxAttemptMessage = 1 << 10

// AttemptOf returns the attempt that failed with e, its message cut to
// MaxAttemptMessage bytes (at a character's start, with "…" after it).
func AttemptOf(e *Error) Attempt {
	msg := e.Message
	if len(msg) > MaxAttemptMessage {
		cut := MaxAttemptMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return Attempt{Worker: e.Worker, Name: e.Name, Message: msg}
}

// Error returns a one-line message: where it failed, then "Name: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Key != (Key{}) {
		b.WriteString("workunit ")
		b.WriteString(e.Key.Short())
		b.WriteString(": ")
	}
	if e.Worker != "" {
		b.WriteString("worker ")
		b.WriteString(e.Worker)
		b.WriteString(": ")
	}
	switch {
	case e.Name == "":
		b.WriteString(e.Message)
	case e.Message == "":
		b.WriteString(e.Name)
	default:
		b.WriteString(e.Name)
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if len(e.Attempts) > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", len(e.Attempts))
	}
	return b.String()
}

// Is reports whether target is an *Error of the same Kind, so that
// errors.Is(err, &workunit.Error{Kind: workunit.TimeLimit}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && t.Name == "" && t.Message == ""
}
