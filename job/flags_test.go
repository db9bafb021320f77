package job

import (
	"io"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/internal/cliflag"
	"github.com/riot-go/riot/sysmem"
	"github.com/riot-go/riot/tracker/trackertest"
)

// parseFlags parses a riot-worker eval command line, as the command does
// (up to the script), with the environment env (name, value, ...).
func parseFlags(t *testing.T, args []string, env ...string) (CommandOptions, error) {
	t.Helper()
	fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	vars := map[string]string{}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	f := addFlags(fs, func(k string) string { return vars[k] })
	if err := fs.Parse(cliflag.NormalizeArgs(fs, args, false)); err != nil {
		return CommandOptions{}, err
	}
	return f.Options(fs.Args())
}

func TestFlags_Modes(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"-e", "1 + 2"})
	require.NoError(t, err)
	assert.Equal(t, "1 + 2", o.Source)
	assert.Empty(t, o.Job.Script)
	assert.True(t, o.GPU)

	o, err = parseFlags(t, []string{"--workers", "2", "--data", "d", "--no-gpu", "job.js", "a", "-b"})
	require.NoError(t, err)
	assert.Equal(t, "job.js", o.Job.Script)
	assert.Equal(t, []string{"a", "-b"}, o.Job.Args)
	assert.Equal(t, 2, o.Job.Workers)
	assert.Equal(t, "d", o.Job.Data)
	assert.False(t, o.GPU)
	assert.Equal(t, ProgressAuto, o.Job.Progress)

	for args, want := range map[string]Progress{"--progress": ProgressOn, "--quiet": ProgressOff} {
		o, err := parseFlags(t, []string{args, "job.js"})
		require.NoError(t, err)
		assert.Equal(t, want, o.Job.Progress, args)
	}

	for _, tt := range []struct {
		args []string
		err  string
	}{
		{nil, "a SCRIPT.js or -e SOURCE is required"},
		{[]string{"-e", "1", "job.js"}, `give -e SOURCE or a SCRIPT.js, not both (unexpected arguments: ["job.js"])`},
		{[]string{"--progress", "--quiet", "job.js"}, "--progress and --quiet contradict each other"},
		{[]string{"--timeout", "5", "-e", "1"}, `invalid argument "5" for "--timeout" flag: 5 what? Give a unit, as in 5s or 5m`},
		{[]string{"--workers", "x", "job.js"}, `invalid argument "x" for "--workers" flag: want a whole number`},
		{[]string{"--nope", "job.js"}, "unknown flag: --nope"},
		{[]string{"-nope", "job.js"}, "unknown flag: --nope"},
		{[]string{"--tracker", "h", "--workers", "4", "job.js"}, "--workers configures the embedded default, and --tracker h sends the work to a tracker's workers instead: leave out --workers"},
		{[]string{"--tracker", "h", "--data", "d", "job.js"}, "--data configures the embedded default, and --tracker h sends"},
		{[]string{"--tracker", "h", "--data", "d", "--workers", "0", "-e", "1"}, "--workers and --data configure the embedded default"},
		{[]string{"--tracker", "h", "--no-gpu", "job.js"}, "--no-gpu configures the embedded default"},
		{[]string{"--workers", "4", "-e", "1"}, "--workers is for job scripts (SCRIPT.js), not -e: leave it out"},
		{[]string{"--data", "d", "-e", "1"}, "--data is for job scripts (SCRIPT.js), not -e"},
		{[]string{"--quiet", "-e", "1"}, "--quiet is for job scripts (SCRIPT.js), not -e"},
		{[]string{"--tracker", "http://h", "job.js"}, `--tracker: tracker address "http://h": scheme "http", want ws or wss: give HOST`},
	} {
		_, err := parseFlags(t, tt.args)
		assert.ErrorContains(t, err, tt.err, "%q", tt.args)
	}
}

// $RIOT_TRACKER sends the work to a tracker as --tracker does: the flags
// of the embedded default conflict with it too, and the error says where
// the tracker came from.
func TestFlags_EmbeddedOnlyWithEnvTracker(t *testing.T) {
	t.Parallel()
	_, err := parseFlags(t, []string{"--workers", "4", "job.js"}, "RIOT_TRACKER", "alfred")
	assert.ErrorContains(t, err, "--workers configures the embedded default, and $RIOT_TRACKER (alfred) sends the work")
	o, err := parseFlags(t, []string{"job.js"}, "RIOT_TRACKER", "alfred")
	require.NoError(t, err)
	assert.Equal(t, "alfred", o.Job.Tracker)
}

func TestFlags_Units(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"--timeout", "1d", "job.js"})
	require.NoError(t, err)
	assert.Equal(t, 24*time.Hour, o.Job.Timeout)
	assert.Equal(t, 24*time.Hour, o.Job.Engine.Timeout, "the embedded default's worker's too")
	o, err = parseFlags(t, []string{"-timeout", "5m", "-e", "1"})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, o.Job.Timeout)
}

func TestFlags_Workers(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"job.js"})
	require.NoError(t, err)
	assert.Equal(t, -1, o.Job.Workers, "unset: one slot per CPU")
	o, err = parseFlags(t, []string{"--workers", "0", "job.js"})
	require.NoError(t, err)
	assert.Equal(t, 0, o.Job.Workers)
	_, err = parseFlags(t, []string{"--workers", "-2", "job.js"})
	assert.ErrorContains(t, err, "--workers -2: want 0 or more")
}

func TestFlags_MemoryLimit(t *testing.T) {
	t.Parallel()
	total, totalErr := sysmem.Total()
	o, err := parseFlags(t, []string{"-e", "1"})
	require.NoError(t, err)
	if totalErr == nil {
		assert.Equal(t, total*cliflag.DefaultMemoryLimit/100, o.Job.Engine.MemoryLimit)
	} else {
		assert.Zero(t, o.Job.Engine.MemoryLimit)
	}
	for arg, want := range map[string]uint64{"none": 0, "2GiB": 2 << 30, "1000": 1000} {
		o, err := parseFlags(t, []string{"--memory-limit", arg, "-e", "1"})
		require.NoError(t, err, arg)
		assert.Equal(t, want, o.Job.Engine.MemoryLimit, arg)
	}
	_, err = parseFlags(t, []string{"--memory-limit", "lots", "-e", "1"})
	assert.ErrorContains(t, err, `memory limit "lots": want a size`)

	// The default limit is for this process and does not stand in the
	// way of a tracker; one given on the command line is a mistake there.
	_, err = parseFlags(t, []string{"--tracker", "h:1", "-e", "1"})
	require.NoError(t, err)
	_, err = parseFlags(t, []string{"-e", "1"}, "RIOT_TRACKER", "h:1")
	require.NoError(t, err)
	_, err = parseFlags(t, []string{"--tracker", "h:1", "job.js"})
	require.NoError(t, err)
	for _, args := range [][]string{
		{"--tracker", "h:1", "--memory-limit", "1GiB", "-e", "1"},
		{"--tracker", "h:1", "--memory-limit", "none", "job.js"},
	} {
		_, err = parseFlags(t, args)
		assert.ErrorContains(t, err, "--memory-limit applies in process only", "%q", args)
	}
}

func TestFlags_CancelOnInterrupt(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"--tracker", "h:1", "--cancel-on-interrupt", "job.js"})
	require.NoError(t, err)
	assert.True(t, o.Job.CancelOnInterrupt)
	_, err = parseFlags(t, []string{"--cancel-on-interrupt", "job.js"})
	assert.ErrorContains(t, err, "--cancel-on-interrupt needs --tracker")
	_, err = parseFlags(t, []string{"--tracker", "h:1", "--cancel-on-interrupt", "-e", "1"})
	assert.ErrorContains(t, err, "--cancel-on-interrupt is for job scripts")
}

// Arguments after the script go to it; those that look like eval's own
// flags get a warning, since they were likely meant for eval.
func TestFlags_FlagsAfterScript(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"--workers", "1", "job.js", "--workers", "0", "--words", "w.txt", "-timeout=1s", "--help", "-h", "--", "--quiet"})
	require.NoError(t, err)
	assert.Equal(t, 1, o.Job.Workers)
	assert.Equal(t, []string{"--workers", "0", "--words", "w.txt", "-timeout=1s", "--help", "-h", "--", "--quiet"}, o.Job.Args, "passed on")
	assert.Equal(t, []string{"--workers, -timeout=1s come after the script, so they go to the script (riot.args), not to eval: " +
		"eval's flags go before the script, as in riot-worker eval [flags] job.js [ARGS...]"}, o.Warnings)

	o, err = parseFlags(t, []string{"job.js", "--words", "w.txt", "--limit", "2"})
	require.NoError(t, err)
	assert.Empty(t, o.Warnings, "the script's own flags")
	o, err = parseFlags(t, []string{"job.js", "-e", "x"})
	require.NoError(t, err)
	assert.Equal(t, []string{"-e comes after the script, so it goes to the script (riot.args), not to eval: " +
		"eval's flags go before the script, as in riot-worker eval [flags] job.js [ARGS...]"}, o.Warnings)
}

// The token's default, $RIOT_TOKEN, is read after parsing: the help
// never shows it. --tls-ca's file is read by Options where it is used.
func TestFlags_TokenAndTLS(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"-e", "1"}, "RIOT_TOKEN", "secret-0123456789abcdef", "RIOT_TRACKER", "alfred")
	require.NoError(t, err)
	assert.Equal(t, "secret-0123456789abcdef", o.Job.Token)
	assert.Equal(t, "alfred", o.Job.Tracker)
	assert.Empty(t, o.Job.WorkerToken)
	o, err = parseFlags(t, []string{"-e", "1"}, "RIOT_WORKER_TOKEN", "worker-0123456789abcdef")
	require.NoError(t, err)
	assert.Equal(t, "worker-0123456789abcdef", o.Job.WorkerToken)
	o, err = parseFlags(t, []string{"--worker-token", "flag-0123456789abcdef", "-e", "1"}, "RIOT_WORKER_TOKEN", "worker-0123456789abcdef")
	require.NoError(t, err)
	assert.Equal(t, "flag-0123456789abcdef", o.Job.WorkerToken, "the flag wins")

	fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	addFlags(fs, func(k string) string {
		if k == "RIOT_TOKEN" {
			return "secret-0123456789abcdef"
		}
		return ""
	})
	assert.Contains(t, fs.FlagUsages(), "(default: $RIOT_TOKEN)")
	assert.NotContains(t, fs.FlagUsages(), "secret-0123456789abcdef")

	cert := trackertest.NewCert(t)
	o, err = parseFlags(t, []string{"--tracker", "h", "--tls-ca", cert.CAFile, "-e", "1"})
	require.NoError(t, err)
	assert.NotNil(t, o.Job.TLSConfig)
	_, err = parseFlags(t, []string{"--tls-ca", "/nonexistent/ca.pem", "job.js"})
	assert.ErrorContains(t, err, "--tls-ca: ")
	o, err = parseFlags(t, []string{"-e", "1"}, "RIOT_TLS_CA", "/nonexistent/ca.pem")
	require.NoError(t, err, "-e in process reaches no tracker")
	assert.Nil(t, o.Job.TLSConfig)
}

func TestConfigureOptions(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	o, err := ConfigureOptions(fs, []string{"-quiet", "job.js", "-quiet"})
	require.NoError(t, err)
	assert.Equal(t, ProgressOff, o.Job.Progress)
	assert.Equal(t, []string{"-quiet"}, o.Job.Args, "the script's")
	fs = pflag.NewFlagSet("eval", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err = ConfigureOptions(fs, []string{"-h"})
	assert.ErrorIs(t, err, pflag.ErrHelp)
}
