package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // an error's text; "" for none
	}{
		{"defaults", nil, ""},
		{"one binary", []string{"--riotd", "/x"}, "both"},
		{"bad store", []string{"--stores", "memory,disk"}, "disk"},
		{"bad limit", []string{"--dict-limits", "5k"}, "5k"},
		{"bad format", []string{"--format", "html"}, "html"},
		{"zero n", []string{"--n", "0"}, "at least 1"},
		{"argument", []string{"extra"}, "unexpected"},
		{"bad peer", []string{"--peers", "dask,ray"}, `"ray" is not a peer`},
		{"zero peer n", []string{"--peers", "dask", "--peer-n", "0"}, "at least 1"},
		{"bad big", []string{"--big", "lots"}, "want a size"},
		{"big", []string{"--big", "512MiB"}, ""},
		{"bad masters", []string{"--masters", "1,lots"}, `--masters: "lots" is not a number of masters`},
		{"zero masters", []string{"--masters", "0"}, `"0" is not a number of masters`},
		{"masters", []string{"--masters", "1, 50,500"}, ""},
		{"zero in flight", []string{"--masters", "5", "--in-flight", "0"}, "--in-flight must be at least 1"},
		{"bad conns", []string{"--conns", "10,many"}, `--conns: "many" is not a number of connections`},
		{"zero conns", []string{"--conns", "0"}, `"0" is not a number of connections`},
		{"conns", []string{"--conns", "1000, 10000"}, ""},
		{"bad restart", []string{"--restart", "1e6"}, `--restart: "1e6" is not a number of workunits`},
		{"zero restart", []string{"--restart", "0"}, `"0" is not a number of workunits`},
		{"restart", []string{"--restart", "1000, 1000000"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseFlags(tc.args, io.Discard)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	c, err := parseFlags([]string{"--stores", " durable ", "--dict-limits", "0,10"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"durable"}, c.stores)
	assert.Equal(t, []int{10}, c.dictLimits)
	assert.Equal(t, 50_000, c.nOne, "a quarter of --n")
	c, err = parseFlags([]string{"--masters", "1, 50,500"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 50, 500}, c.masters)
}

func TestDistribution(t *testing.T) {
	t.Parallel()
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(100-i) * time.Millisecond // 100 ms down to 1 ms
	}
	d := distribution(lat)
	assert.Equal(t, 100, d.n)
	assert.Equal(t, 50*time.Millisecond, d.p50)
	assert.Equal(t, 90*time.Millisecond, d.p90)
	assert.Equal(t, 99*time.Millisecond, d.p99)
	assert.Equal(t, 100*time.Millisecond, d.max)
	assert.Equal(t, 50500*time.Microsecond, d.mean)
	assert.Equal(t, latency{}, distribution(nil))
}

func TestDictionarySize(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "scripts", "testdata", "words.txt")
	// abc def abcdef ghi abcghi defghi xyzzy abcabc: 8 words of 3 letters
	// or more (zz is too short).
	words, text, file, err := dictionarySize(path, 100)
	require.NoError(t, err)
	assert.Equal(t, 8, words)
	assert.EqualValues(t, len("abc def abcdef ghi abcghi defghi xyzzy abcabc "), text)
	assert.EqualValues(t, len("abc def abcdef ghi abcghi defghi zz xyzzy abcabc "), file)
	words, text, _, err = dictionarySize(path, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, words)
	assert.EqualValues(t, 8, text)
	words, _, _, err = dictionarySize(path, -1)
	require.NoError(t, err)
	assert.Equal(t, 8, words)
	assert.Equal(t, 5, jsLength("día😀"), "UTF-16 code units, as JavaScript counts")
}

// TestCountingProxy: the proxy forwards both ways and counts each.
func TestCountingProxy(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		_, _ = c.Write(bytes.Repeat(buf, 3)) // 15 bytes back
	}()
	p, err := startProxy(ln.Addr().String())
	require.NoError(t, err)
	defer p.Close()

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	got := make([]byte, 15)
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "hellohellohello", string(got))
	up, down := p.Bytes()
	assert.EqualValues(t, 5, up)
	assert.EqualValues(t, 15, down)
}

func TestFormat(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "52,345", thousands(52345.4))
	assert.Equal(t, "1,000,000", thousands(1e6))
	assert.Equal(t, "2.5", thousands(2.5))
	assert.Equal(t, "0.300 ms", ms(300*time.Microsecond))
	assert.Equal(t, "1.62 ms", ms(1620*time.Microsecond))
	assert.Equal(t, "48.6 KiB", size(49795))
	assert.Equal(t, "512 B", size(512))
}

// TestRun: riot-bench end to end, small: it builds riotd and riot-worker,
// measures both stores and a dictionary job, and prints its tables.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs riotd and riot-worker processes")
	}
	t.Parallel()
	words := filepath.Join("..", "..", "scripts", "testdata", "words.txt")
	python, args := fakePython(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--n", "300", "--warmup", "10", "--latency-n", "30", "--slots", "1",
		"--dict-limits", "8", "--dict-whole", "3", "--words", words, "--format", "markdown", "--timeout", "2m",
		"--peers", "dask", "--python", python, "--peer-n", "40", "--peer-latency-n", "3"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	out := stdout.String()
	for _, want := range []string{
		"| throughput, 1 worker, 75 workunits pipelined |",
		"| throughput, 2 workers, 300 workunits pipelined |",
		"| round trip p99 |",
		"riotd --memory", "riotd --data DIR",
		"| dict.js --limit 8 | whole list, 3 workunits |",
		"| workunits (one per word); compound words found | 8; 4 | 3; ",
		"| measure | riot (riotd --memory) | Dask distributed 9.9.9 |",
		"| throughput, pipelined |", "| 20/s (40 tasks in 2s) |",
		"| round trip p50, one at a time |", "| 20.0 ms |",
		"Dask distributed 9.9.9 on Python 3.0.0: a fake",
	} {
		assert.Contains(t, out, want)
	}
	got, err := os.ReadFile(args)
	require.NoError(t, err)
	assert.Contains(t, string(got), "--workers 2 --threads 1 --n 40 --warmup 10 --latency-n 3", "the script gets riot's sizes")
	assert.True(t, strings.HasPrefix(out, "riot-bench --n 300"), out)
}

// TestRun_Big: --big sends one value through real riotd and riot-worker
// processes and back, and reports its times and the peak memory of each.
func TestRun_Big(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs riotd and riot-worker processes")
	}
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--big", "4MiB", "--stores", "durable", "--timeout", "2m"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	assert.Contains(t, stdout.String(), "| durable | 4 MiB | ")
	assert.Contains(t, stdout.String(), "| master peak (VmHWM; when doWork returned) | riotd peak (VmHWM; before) |")
}

// TestRun_Masters: --masters runs workunits from many masters at once
// through real riotd and riot-worker processes, and reports the workers'
// CPU per workunit beside one master's.
func TestRun_Masters(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs riotd and riot-worker processes")
	}
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--masters", "1,3", "--in-flight", "12", "--n", "300", "--warmup", "6", "--stores", "memory", "--slots", "1", "--timeout", "2m"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "| store | masters | waiting a master | workers × slots | workunits | workunits/s | workers' CPU per workunit | CPU vs 1 master | a worker's peak RSS |")
	assert.Contains(t, out, " MiB |\n")
	assert.Contains(t, out, "| memory | 1 | 12 | 2 × 1 | 300 | ")
	assert.Contains(t, out, "| memory | 3 | 4 | 2 × 1 | 300 | ")
}

// TestRun_Conns: --conns holds worker connections on a real riotd
// process, reports what each costs it, and runs workunits through them.
func TestRun_Conns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs riotd processes")
	}
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--conns", "20", "--n", "500", "--prefetch", "2", "--timeout", "2m"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "| connections | riotd RSS per idle connection | heap per idle connection | stacks per idle connection | goroutines per connection |")
	assert.Contains(t, out, "| 20 | ")
	assert.Contains(t, out, " | 500 | ")
}

// TestRun_Restart: --restart fills a real durable riotd, kills it and
// stops it, and reports each start, the store's workunits all restored
// and the first one answered from it.
func TestRun_Restart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs riotd processes")
	}
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--restart", "300", "--slots", "1", "--timeout", "2m"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "| records | riotd ended by | serving after | first memoized answer after | RSS (live) | heap in use (live) | RSS ÷ live |")
	assert.Contains(t, out, "| 300 | (built live in ")
	assert.Contains(t, out, "| 300 | SIGKILL | ")
	assert.Contains(t, out, "| 300 | stop (SIGTERM) | ")
}

// fakePython writes a fake Python for --peers dask: it passes the import
// check, records the peer script's arguments in a file, and prints a
// report as the script would. It returns its path and the file's.
func fakePython(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	py := filepath.Join(dir, "fake-python")
	report := `{"peer": "Dask distributed", "version": "9.9.9", "python": "3.0.0", "setup": "a fake", "n": 40, "seconds": 2.0, "latencies": [0.01, 0.02, 0.03]}`
	script := "#!/bin/sh\nif [ \"$1\" = -c ]; then exit 0; fi\nshift\necho \"$@\" > " + args + "\necho '" + report + "'\n"
	require.NoError(t, os.WriteFile(py, []byte(script), 0o755))
	return py, args
}

func TestParsePeer(t *testing.T) {
	t.Parallel()
	p, err := parsePeer([]byte(`{"peer": "Dask distributed", "version": "1", "n": 10, "seconds": 0.5, "latencies": [0.002, 0.001]}` + "\n"))
	require.NoError(t, err)
	assert.InDelta(t, 20, p.rate.perSecond(), 0.001)
	assert.Equal(t, time.Millisecond, p.latency.p50)
	_, err = parsePeer([]byte("Traceback (most recent call last):"))
	assert.ErrorContains(t, err, "does not decode")
	_, err = parsePeer([]byte(`{"peer": "x", "n": 0}`))
	assert.ErrorContains(t, err, "measured nothing")
}

func TestPythonWithDask_None(t *testing.T) {
	t.Parallel()
	_, err := pythonWithDask(t.Context(), filepath.Join(t.TempDir(), "no-python"))
	require.Error(t, err)
	assert.ErrorContains(t, err, "apt-get install python3-distributed")
}
