package inspect

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/engine/internal/opguard"
)

// gojaSyntax matches goja's parser messages, "file: Line 2:3 message".
var gojaSyntax = regexp.MustCompile(`^(.*): Line (\d+):(\d+) (.*)$`)

// SyntaxError returns the message and a V8-style stack of a compile error.
func SyntaxError(se *goja.CompilerSyntaxError) (msg, stack string) {
	msg = se.Message
	if m := gojaSyntax.FindStringSubmatch(msg); m != nil {
		msg = m[4]
		return msg, "SyntaxError: " + msg + "\n    at " + m[1] + ":" + m[2] + ":" + m[3]
	}
	if se.File != nil {
		pos := se.File.Position(se.Offset)
		return msg, fmt.Sprintf("SyntaxError: %s\n    at %s:%d:%d", msg, pos.Filename, pos.Line, pos.Column)
	}
	return msg, "SyntaxError: " + msg
}

// SafeString returns a property value as a string: "" for undefined
// and null.
func SafeString(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return ""
	}
	return v.String()
}

// StackString writes a V8-style stack: "Name: message" and then one
// "    at ..." line per frame, at most max frames (0: all).
func StackString(name, msg string, frames []goja.StackFrame, max int) string {
	var b strings.Builder
	switch {
	case name == "":
		b.WriteString(msg)
	case msg == "":
		b.WriteString(name)
	default:
		b.WriteString(name + ": " + msg)
	}
	if max > 0 && len(frames) > max {
		frames = frames[:max]
	}
	WriteFrames(&b, frames)
	return b.String()
}

// WriteFrames appends one "    at ..." line per frame to b, leaving out
// riot's internal scripts (jsvalue.InternalFile) and the BigInt
// operators' guard (opguard.FramePrefix).
func WriteFrames(b *strings.Builder, frames []goja.StackFrame) {
	for i := range frames {
		f := &frames[i]
		name := f.FuncName()
		if name == "<anonymous>" {
			name = ""
		}
		pos := f.Position()
		if pos.Filename == jsvalue.InternalFile || strings.HasPrefix(name, opguard.FramePrefix) {
			continue
		}
		b.WriteString("\n    at ")
		if pos.Filename == "" && pos.Line == 0 {
			if name == "" {
				name = "<anonymous>"
			}
			b.WriteString(name + " (native)")
			continue
		}
		loc := pos.Filename + ":" + strconv.Itoa(pos.Line) + ":" + strconv.Itoa(pos.Column)
		if name == "" {
			b.WriteString(loc)
		} else {
			b.WriteString(name + " (" + loc + ")")
		}
	}
}

// gojaFrame matches goja's frame suffix, "file:line:col(pc)".
var gojaFrame = regexp.MustCompile(`:(\d+):(\d+)\(\d+\)`)

// NormalizeStack rewrites goja's stack format (tab-indented frames with a
// program counter) into V8's, which users know.
func NormalizeStack(s string) string {
	s = strings.TrimRight(s, "\n")
	s = strings.ReplaceAll(s, "\n\tat ", "\n    at ")
	s = gojaFrame.ReplaceAllString(s, ":$1:$2")
	if !strings.Contains(s, jsvalue.InternalFile) && !strings.Contains(s, opguard.FramePrefix) {
		return s
	}
	// riot's own frames: the value codec's helpers, and the BigInt
	// operators' guard (a stack then begins at the operator, as V8's does).
	lines := strings.Split(s, "\n")
	kept := lines[:1]
	for _, l := range lines[1:] {
		if !strings.Contains(l, jsvalue.InternalFile+":") && !strings.Contains(l, opguard.FramePrefix) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}
