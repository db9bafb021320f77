// Command shots takes the screenshots of riotd's dashboard that
// docs/dashboard.md shows. It builds riotd and riot-worker, starts them on
// loopback with two workers and a sample job (e2e/testdata/dashboard.js),
// opens each page in a headless Chromium and saves it as a PNG:
//
//	go run ./scripts/shots -out docs/dashboard
//
// scripts/dashboard-screenshots.sh runs it. It needs Chromium (apt-get
// install chromium, or RIOT_CHROMIUM=/path/to/chrome).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/internal/browsertest"
	"github.com/riot-go/riot/tracker"
)

func main() {
	out := flag.String("out", "docs/dashboard", "the `directory` to write the PNGs into")
	width := flag.Int("width", 1280, "the browser window's width in pixels")
	height := flag.Int("height", 860, "the browser window's height in pixels")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := run(ctx, *out, *width, *height); err != nil {
		fmt.Fprintln(os.Stderr, "shots:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, width, height int) error {
	chromium := browsertest.Path()
	if chromium == "" {
		return errors.New("no Chromium: apt-get install chromium, or set RIOT_CHROMIUM")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "riot-shots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	slog.Info("building riotd and riot-worker")
	bins, err := e2e.Build(ctx, dir)
	if err != nil {
		return err
	}
	tr, err := e2e.LaunchTracker(ctx, bins, e2e.TrackerOptions{Data: filepath.Join(dir, "data"), Args: []string{"--name", "riot-1:2355"}})
	if err != nil {
		return err
	}
	defer tr.Close()
	for _, name := range []string{"alpha", "beta"} {
		w, err := e2e.LaunchWorker(ctx, bins, tr.Addr(), e2e.WorkerOptions{Name: name, Slots: 2})
		if err != nil {
			return err
		}
		defer w.Close()
	}

	// A short job that has ended, then one that runs while the pictures
	// are taken.
	slog.Info("running the jobs")
	if res, err := bins.Eval(ctx, nil, "--tracker", tr.Addr(), "--job", "warm-up.js", "e2e/testdata/dashboard.js", "300", "0.02"); err != nil || res.Code != 0 {
		return fmt.Errorf("the warm-up job: %v %v", err, res)
	}
	jobCtx, endJob := context.WithCancel(ctx)
	defer endJob()
	go func() {
		_, _ = bins.Eval(jobCtx, nil, "--tracker", tr.Addr(), "--job", "words.js", "e2e/testdata/dashboard.js", "5000", "0.1")
	}()
	if _, err := tr.WaitStatus(ctx, func(s tracker.Status) bool { return s.Workunits.Running > 0 && s.UptimeSeconds >= 50 }); err != nil {
		return err
	}

	b, err := browsertest.Start(ctx, chromium, width, height)
	if err != nil {
		return err
	}
	defer b.Close()
	base := "http://" + tr.Addr()
	shots := []struct {
		name  string
		steps []chromedp.Action[chromedp.Void]
	}{
		{"login", []chromedp.Action[chromedp.Void]{chromedp.Navigate(base + "/login"), chromedp.WaitVisible(chromedp.CSS("#login-form"))}},
		{"overview", []chromedp.Action[chromedp.Void]{chromedp.Navigate(base + "/"), chromedp.WaitVisible(chromedp.CSS("#throughput canvas")),
			untilText("#jobs-in-progress", "words.js")}},
		{"workers", []chromedp.Action[chromedp.Void]{route("#/workers"), chromedp.WaitVisible(chromedp.CSS("#workers table"))}},
		{"jobs", []chromedp.Action[chromedp.Void]{route("#/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs table"))}},
		{"job", []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.CSS("#jobs tbody tr:first-child a[href^='#/jobs/']")),
			chromedp.WaitVisible(chromedp.CSS("#job-workunits table"))}},
		{"workunits", []chromedp.Action[chromedp.Void]{route("#/workunits?status=running,done"), chromedp.WaitVisible(chromedp.CSS("#workunits table"))}},
		{"failures", []chromedp.Action[chromedp.Void]{route("#/failures"), chromedp.WaitVisible(chromedp.CSS("#failures table"))}},
		{"workunit", []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.CSS("#failures a.key")), chromedp.WaitVisible(chromedp.CSS("#wu-stack"))}},
		{"stream", []chromedp.Action[chromedp.Void]{route("#/stream"), untilText("#stream-note", "workunits on")}},
	}
	for _, s := range shots {
		sctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
		err := chromedp.Do(sctx, s.steps...)
		var png []byte
		if err == nil {
			png, err = chromedp.Run(sctx, chromedp.CaptureScreenshot())
		}
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		file := filepath.Join(out, s.name+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			return err
		}
		slog.Info("saved", "file", file, "bytes", len(png))
	}
	if errs := b.Errors(); len(errs) > 0 {
		return fmt.Errorf("the pages threw or logged errors: %q", errs)
	}
	return nil
}

// route follows one of the dashboard's hash routes.
func route(hash string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", hash))
}

// untilText waits until the element's text contains want.
func untilText(sel, want string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(time.Minute))
}
