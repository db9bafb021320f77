package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/internal/version"
)

// tree is a command tree as riot-worker's: a root that takes an argument
// and flags before and after it, and a command whose arguments are a
// script's. It records what each command got.
func tree(got *[]string) *cobra.Command {
	root := &cobra.Command{Use: "prog [flags] HOST", Args: cobra.ArbitraryArgs}
	SetHelp(root, "prog: a test\n")
	port := root.Flags().Int("port", 0, "a `port`")
	name := root.Flags().String("name", "", "a `name`")
	quiet := root.Flags().Bool("quiet", false, "be quiet")
	root.RunE = func(_ *cobra.Command, args []string) error {
		*got = append(*got, fmt.Sprintf("root port=%d name=%s quiet=%v args=%q", *port, *name, *quiet, args))
		switch strings.Join(args, " ") {
		case "fail":
			return Fail(errors.New("it failed"))
		case "quit":
			return Exit(130)
		case "usage":
			return &UsageError{Err: errors.New("no such thing"), Hint: "run 'prog help'"}
		case "plain":
			return errors.New("plain error")
		}
		return nil
	}
	run := &cobra.Command{Use: "run SCRIPT [ARGS...]", Args: cobra.ArbitraryArgs}
	timeout := run.Flags().String("timeout", "", "a `duration`")
	src := run.Flags().StringP("e", "e", "", "`source`")
	FlagsBeforeArgs(run)
	run.RunE = func(_ *cobra.Command, args []string) error {
		*got = append(*got, fmt.Sprintf("run timeout=%s e=%s args=%q", *timeout, *src, args))
		return nil
	}
	root.AddCommand(run, VersionCommand("prog"))
	return root
}

func execute(args ...string) (code int, stdout, stderr string, got []string) {
	var out, errb bytes.Buffer
	code = Execute(context.Background(), tree(&got), args, &out, &errb)
	return code, out.String(), errb.String(), got
}

func TestExecute_Exits(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"h"}, 0, ""},
		{[]string{"fail"}, 1, "prog: it failed\n"},
		{[]string{"quit"}, 130, ""},
		{[]string{"usage"}, 2, "prog: no such thing\nrun 'prog help'\n"},
		{[]string{"plain"}, 2, "prog: plain error\nrun 'prog --help' for the flags\n"},
		{[]string{"--port", "x", "h"}, 2, "prog: invalid argument \"x\" for \"--port\" flag: must be an integer\nrun 'prog --help' for the flags\n"},
		{[]string{"run", "--nope"}, 2, "prog run: unknown flag: --nope\nrun 'prog run --help' for the flags\n"},
		{[]string{"version", "x"}, 2, "prog version: unknown command \"x\" for \"prog version\"\nrun 'prog version --help' for the flags\n"},
	} {
		code, _, stderr, _ := execute(tt.args...)
		assert.Equal(t, tt.code, code, "%q", tt.args)
		assert.Equal(t, tt.stderr, stderr, "%q", tt.args)
	}
}

func TestExecute_Flags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "1", "h", "--quiet"}, `root port=1 name= quiet=true args=["h"]`},
		{[]string{"-port", "1", "h", "-quiet"}, `root port=1 name= quiet=true args=["h"]`},
		{[]string{"-port=1", "-name", "run", "h"}, `root port=1 name=run quiet=false args=["h"]`},
		{[]string{"-name", "-quiet", "h"}, `root port=0 name=-quiet quiet=false args=["h"]`},
		{[]string{"h", "--", "-port"}, `root port=0 name= quiet=false args=["h" "-port"]`},
		{[]string{"run", "-timeout", "1s", "job", "-timeout", "2s", "--quiet", "-e", "x"}, `run timeout=1s e= args=["job" "-timeout" "2s" "--quiet" "-e" "x"]`},
		{[]string{"run", "-e", "-timeout", "-timeout=3s"}, `run timeout=3s e=-timeout args=[]`},
		{[]string{"run", "job", "--help", "--", "x"}, `run timeout= e= args=["job" "--help" "--" "x"]`},
	} {
		code, _, stderr, got := execute(tt.args...)
		require.Equal(t, 0, code, "%q: %s", tt.args, stderr)
		assert.Equal(t, []string{tt.want}, got, "%q", tt.args)
	}
}

func TestExecute_HelpAndVersion(t *testing.T) {
	t.Parallel()
	code, stdout, _, got := execute("--help")
	assert.Equal(t, 0, code)
	assert.Empty(t, got)
	assert.Equal(t, "prog: a test\n\nFlags:\n"+
		"  -h, --help        help for prog\n"+
		"      --name name   a name\n"+
		"      --port port   a port\n"+
		"      --quiet       be quiet\n"+
		"  -v, --version     version for prog\n", stdout)
	line := "prog " + version.Read().String() + "\n"
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		code, stdout, _, _ = execute(args...)
		assert.Equal(t, 0, code, "%q", args)
		assert.Equal(t, line, stdout, "%q", args)
	}
	// cobra's own commands keep cobra's help.
	code, stdout, _, _ = execute("completion", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "Available Commands:")
	assert.Contains(t, stdout, "bash")
}
