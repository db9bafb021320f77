package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestEval_Prints(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		src, stdout, stderr string
	}{
		{"3 + 5", "8\n", ""},
		{"'riot'", "\"riot\"\n", ""},
		{"({a: [1, null]})", "{\"a\":[1,null]}\n", ""},
		{"console.log('x'); new Set([1])", "Set(1) { 1 }\n", "[local] x\n"},
		{"undefined", "undefined\n", ""},
	} {
		code, stdout, stderr := runCmd(t, "eval", "-e", tt.src)
		assert.Equal(t, 0, code, tt.src)
		assert.Equal(t, tt.stdout, stdout, tt.src)
		assert.Equal(t, tt.stderr, stderr, tt.src)
	}
}

func TestEval_Failures(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCmd(t, "eval", "-e", "function f() {\n  throw new TypeError('bad input')\n}\nf()")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "TypeError: bad input\n    at f (eval:2:9)\n    at eval:4:2\n", stderr)

	code, _, stderr = runCmd(t, "eval", "--timeout", "100ms", "-e", "while (true) {}")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "TimeoutError: workunit ran past its time limit of 100ms")

	code, _, stderr = runCmd(t, "eval")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-e SOURCE is required")

	code, _, stderr = runCmd(t, "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown command "nope"`)

	code, stdout, _ = runCmd(t, "eval", "--help")
	assert.Equal(t, 0, code)
	_ = stdout
}

// TestEval_Process runs the real binary, as a user does.
func TestEval_Process(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "riot-worker")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	out, err := exec.Command(bin, "eval", "-e", "[1, 2, 3].map(x => x * 10)").Output()
	require.NoError(t, err)
	assert.Equal(t, "[10,20,30]\n", string(out))

	cmd := exec.Command(bin, "eval", "-e", "null.x")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "TypeError: Cannot read property 'x' of")
}
