package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Module is the import path of riot's module, which ModuleRoot looks for.
const Module = "github.com/riot-go/riot"

// Bins are the paths of riot's two commands, as Build makes them. The
// harness starts its processes from them: Bins.StartTracker,
// Bins.StartWorker, Bins.Eval.
type Bins struct {
	// Riotd is the tracker, RiotWorker the worker and master command.
	Riotd, RiotWorker string
	// Root is the module's root directory: the working directory of
	// riot-worker eval, so that paths such as scripts/dict.js work.
	Root string
}

// Build compiles cmd/riotd and cmd/riot-worker of the module that holds the
// working directory into dir with `go build` (flags, such as "-race", are
// passed to it) and returns their paths. Call it once per test binary, from
// TestMain, with a temporary directory:
//
//	dir, _ := os.MkdirTemp("", "riot-e2e-")
//	bins, err := e2e.Build(ctx, dir)
//
// It takes a few seconds with a warm build cache.
func Build(ctx context.Context, dir string, flags ...string) (Bins, error) {
	root, err := ModuleRoot()
	if err != nil {
		return Bins{}, err
	}
	b := Bins{
		Riotd:      filepath.Join(dir, "riotd"),
		RiotWorker: filepath.Join(dir, "riot-worker"),
		Root:       root,
	}
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, flags...)
	args = append(args, "./cmd/riotd", "./cmd/riot-worker")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Bins{}, fmt.Errorf("e2e: go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return b, nil
}

// ModuleRoot returns the directory of riot's go.mod: the working directory
// or the nearest directory above it whose go.mod declares Module.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("e2e: %w", err)
	}
	for {
		if mod, err := modulePath(filepath.Join(dir, "go.mod")); err == nil && mod == Module {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("e2e: no go.mod of %s in the working directory or above it", Module)
		}
		dir = parent
	}
}

func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no module line")
}

// Main is a TestMain body for packages of process tests: it builds riotd
// and riot-worker into a temporary directory, sets *bins, runs the tests,
// and removes the directory. It returns the exit status for os.Exit.
func Main(m *testing.M, bins *Bins) int {
	dir, err := os.MkdirTemp("", "riot-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if *bins, err = Build(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
