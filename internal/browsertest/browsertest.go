// Package browsertest starts a headless Chromium, driven with chromedp, for
// the tests that look at riotd's dashboard in a real browser and for the
// program that takes its screenshots. It records what the page's
// JavaScript threw and what it logged as an error (a Content-Security-Policy
// refusal among them), so that a test can require that there was none.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// names are the names Chromium goes by on PATH: Debian's package
// (apt-get install chromium) first.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Path returns the Chromium to run: $RIOT_CHROMIUM when set, else the
// first of chromium, chromium-browser, google-chrome on PATH; "" when there
// is none.
func Path() string {
	if p := os.Getenv("RIOT_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	// Ctx is the tab's context, for chromedp.Run.
	Ctx context.Context

	cancel func()
	done   chan struct{} // closed when the console's reader ends
	mu     sync.Mutex
	errs   []string
}

// Start starts a headless Chromium (at path, see Path) with a window of
// width by height pixels and opens a tab. Its processes end with Close or
// when ctx ends.
func Start(ctx context.Context, path string, width, height int) (*Browser, error) {
	if path == "" {
		return nil, fmt.Errorf("browsertest: no Chromium: install it (apt-get install chromium) or set RIOT_CHROMIUM")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("lang", "en-US"),
	)
	if os.Geteuid() == 0 { // Chromium refuses to run its sandbox as root (CI containers)
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	tctx, tcancel := chromedp.NewContext(actx)
	b := &Browser{Ctx: tctx, cancel: func() { tcancel(); acancel() }}
	if err := chromedp.Do(tctx); err != nil { // starts the browser and opens the tab
		b.Close()
		return nil, fmt.Errorf("browsertest: starting %s: %w", path, err)
	}
	messages := chromedp.Console(tctx)
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, m.String()+" ("+m.URL+")")
				b.mu.Unlock()
			}
		}
	}()
	return b, nil
}

// Errors returns what the pages threw or logged as errors so far (the
// browser logs a failed request as one: 404, or a refusal the test
// provoked), leaving out those that contain one of except.
func (b *Browser) Errors(except ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []string
next:
	for _, e := range b.errs {
		for _, x := range except {
			if strings.Contains(e, x) {
				continue next
			}
		}
		errs = append(errs, e)
	}
	return errs
}

// Close ends the browser.
func (b *Browser) Close() {
	b.cancel()
	if b.done != nil {
		<-b.done
	}
}

// New starts a browser for the test (1280 by 900 pixels) and closes it when
// the test ends. It skips the test when no Chromium is installed.
func New(t testing.TB) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		t.Skip("no Chromium to drive (apt-get install chromium, or set RIOT_CHROMIUM): skipping the browser test")
	}
	b, err := Start(t.Context(), path, 1280, 900)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(b.Close)
	return b
}
