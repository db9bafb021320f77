package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one riot-bench run measured.
type report struct {
	cfg     *config
	env     string
	load    [2]string // the load average at the start and at the end
	started time.Time
	elapsed time.Duration
	stores  []storeResult
	dicts   []dictResult
	peers   []peer
}

// table is a header row and rows of cells.
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer, format string) {
	if format == "markdown" {
		fmt.Fprintln(w, "| "+strings.Join(t.head, " | ")+" |")
		sep := make([]string, len(t.head))
		for i := range sep {
			sep[i] = "---"
		}
		fmt.Fprintln(w, "| "+strings.Join(sep, " | ")+" |")
		for _, r := range t.rows {
			fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
		}
		fmt.Fprintln(w)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.head, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func (r *report) write(w io.Writer, format string) {
	cfg := r.cfg
	heading := func(s string) {
		if format == "markdown" {
			fmt.Fprintf(w, "#### %s\n\n", s)
		} else {
			fmt.Fprintf(w, "%s\n%s\n", s, strings.Repeat("-", len(s)))
		}
	}
	fmt.Fprintf(w, "riot-bench %s\n", strings.Join(cfg.args, " "))
	prefetch := "default"
	if cfg.prefetch > 0 {
		prefetch = fmt.Sprint(cfg.prefetch)
	}
	fmt.Fprintf(w, "%s; %s; riotd and riot-worker processes (--slots %d, --prefetch %s) on loopback, a Go client master in riot-bench; took %s; load average %s at the start, %s at the end\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), r.env, cfg.slots, prefetch, r.elapsed.Round(time.Second), r.load[0], r.load[1])

	if len(r.stores) > 0 {
		heading(fmt.Sprintf("Trivial workunits (%s), end to end", trivialFn))
		t := &table{head: []string{"measure"}}
		for _, s := range r.stores {
			t.head = append(t.head, "riotd "+storeFlag(s.store))
		}
		t.head = append(t.head, "target")
		row := func(name, target string, f func(storeResult) string) {
			cells := []string{name}
			for _, s := range r.stores {
				cells = append(cells, f(s))
			}
			t.add(append(cells, target)...)
		}
		row(fmt.Sprintf("throughput, 1 worker, %d workunits pipelined", cfg.nOne), fmt.Sprintf("Riot: %.1f/s", riotOneWorker),
			func(s storeResult) string { return ratePerSec(s.one) })
		row(fmt.Sprintf("throughput, %d workers, %d workunits pipelined", cfg.workers, cfg.n),
			fmt.Sprintf("≥ %s/s in memory, %s/s durable (Riot, 2 workers: %.0f/s)", thousands(targetRate), thousands(targetDurableRate), riotTwoWorkers),
			func(s storeResult) string { return ratePerSec(s.many) + mark(s.many.perSecond() >= s.targets().rate) })
		if cfg.dashboard {
			row(fmt.Sprintf("throughput, %d workers, with a dashboard open (updates; requests)", cfg.workers), "within 5% of the row above",
				func(s storeResult) string {
					return fmt.Sprintf("%s (%.1f%%; %d; %d)", ratePerSec(s.dash), 100*(s.dash.perSecond()/s.many.perSecond()-1), s.dashEvents, s.dashRequests)
				})
		}
		row("× the original Riot (1 worker; 2 workers)", "",
			func(s storeResult) string {
				return fmt.Sprintf("×%s; ×%s", thousands(s.one.perSecond()/riotOneWorker),
					thousands(s.many.perSecond()/riotTwoWorkers))
			})
		row(fmt.Sprintf("round trip p50, %d workunits one at a time", cfg.latencyN), "≤ "+ms(targetP50)+" in memory, "+ms(targetDurableP50)+" durable",
			func(s storeResult) string { return ms(s.latency.p50) + mark(s.latency.p50 <= s.targets().p50) })
		row("round trip p90", "", func(s storeResult) string { return ms(s.latency.p90) })
		row("round trip p99", "≤ "+ms(targetP99),
			func(s storeResult) string { return ms(s.latency.p99) + mark(s.latency.p99 <= targetP99) })
		row("round trip max", "", func(s storeResult) string { return ms(s.latency.max) })
		row(fmt.Sprintf("store commits in the %d-worker run (records each)", cfg.workers), "",
			func(s storeResult) string {
				if s.commits == 0 {
					return "—"
				}
				return fmt.Sprintf("%s (%.0f)", thousands(s.commits), s.commitRecs/s.commits)
			})
		t.write(w, format)
	}

	if len(r.peers) > 0 {
		r.writePeers(w, format, heading)
	}

	if len(r.dicts) > 0 {
		heading(fmt.Sprintf("Bytes on the wire: scripts/dict.js over %s, %d workers", cfg.words, cfg.workers))
		t := &table{head: []string{"measure"}}
		for _, d := range r.dicts {
			t.head = append(t.head, d.label)
		}
		row := func(name string, f func(dictResult) string) {
			cells := []string{name}
			for _, d := range r.dicts {
				cells = append(cells, f(d))
			}
			t.add(cells...)
		}
		row("dictionary: words, size as text", func(d dictResult) string {
			return fmt.Sprintf("%s words, %s", count(d.words), size(float64(d.dictBytes)))
		})
		row("workunits (one per word); compound words found", func(d dictResult) string {
			return fmt.Sprintf("%s; %s", count(d.workunits), count(d.found))
		})
		row("time (riot-worker eval, start to end)", func(d dictResult) string { return d.elapsed.Round(10 * time.Millisecond).String() })
		row("master → riotd (TCP)", func(d dictResult) string { return size(float64(d.masterUp)) })
		row("riotd → master (TCP)", func(d dictResult) string { return size(float64(d.masterDown)) })
		row("riotd → workers (TCP)", func(d dictResult) string { return size(float64(d.workerDown)) })
		row("workers → riotd (TCP)", func(d dictResult) string { return size(float64(d.workerUp)) })
		row("per workunit: master → riotd", func(d dictResult) string { return perUnit(d.masterUp, d) })
		row("per workunit: riotd → workers", func(d dictResult) string { return perUnit(d.workerDown, d) })
		row("per workunit, all four directions", func(d dictResult) string {
			return perUnit(d.masterUp+d.masterDown+d.workerUp+d.workerDown, d)
		})
		row("riotd → workers ÷ dictionary size", func(d dictResult) string {
			return fmt.Sprintf("%.1f×", float64(d.workerDown)/float64(d.dictBytes))
		})
		row("riotd's riot_bytes_total in; out (websocket payloads)", func(d dictResult) string {
			return size(d.metricsIn) + "; " + size(d.metricsOut)
		})
		t.write(w, format)
		fmt.Fprintf(w, "The word list is %s. dict.js --limit L keeps its first L lower-case words of 3 letters or more as the dictionary and makes one workunit of each; "+
			"the whole-list variant (riot-bench's own script) keeps every word of 3 letters or more as the dictionary and makes workunits of the first N lower-case ones. "+
			"Every workunit captures the dictionary; a captured value travels as a blob when it is 64 KiB or more, or 1 KiB or more and carried by workunits adding up to 64 KiB. Bytes are counted by TCP proxies between riotd and the master, and between riotd and the workers.\n\n",
			size(float64(r.dicts[0].fileBytes)))
	}
}

func storeFlag(store string) string {
	switch store {
	case "durable":
		return "--data DIR"
	case "replicas":
		return "3 × --replica-id --data DIR"
	}
	return "--memory"
}

// targets returns the throughput and round-trip p50 targets of r's store.
func (r storeResult) targets() (t struct {
	rate float64
	p50  time.Duration
}) {
	t.rate, t.p50 = targetRate, targetP50
	if r.store == "durable" || r.store == "replicas" {
		t.rate, t.p50 = targetDurableRate, targetDurableP50
	}
	return t
}

func mark(ok bool) string {
	if ok {
		return " ✓"
	}
	return " ✗"
}

func ratePerSec(r rate) string {
	if r.n == 0 {
		return "—"
	}
	return fmt.Sprintf("%s/s (%s)", thousands(r.perSecond()), r.elapsed.Round(10*time.Millisecond))
}

func perUnit(bytes int64, d dictResult) string {
	if d.workunits == 0 {
		return "—"
	}
	return size(float64(bytes) / float64(d.workunits))
}

// ms formats a duration in milliseconds with three significant digits.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	case v >= 1:
		return fmt.Sprintf("%.2f ms", v)
	default:
		return fmt.Sprintf("%.3f ms", v)
	}
}

// thousands formats v rounded, with commas: 52,345; below 10 with one
// decimal.
func thousands(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// count formats a count with commas.
func count(n int) string {
	if n < 10 {
		return strconv.Itoa(n)
	}
	return thousands(float64(n))
}

// size formats a byte count: 512 B, 48.6 KiB, 1.27 MiB.
func size(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.2f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", v)
	}
}

// writePeers writes riot's figures (its first store's) beside each peer's
// on the same trivial tasks.
func (r *report) writePeers(w io.Writer, format string, heading func(string)) {
	cfg := r.cfg
	heading(fmt.Sprintf("Peers: the same trivial tasks, %d workers × %d slots (threads)", cfg.workers, cfg.slots))
	t := &table{head: []string{"measure"}}
	var riot *storeResult
	if len(r.stores) > 0 {
		riot = &r.stores[0]
		t.head = append(t.head, "riot (riotd "+storeFlag(riot.store)+")")
	}
	for _, p := range r.peers {
		t.head = append(t.head, p.Peer+" "+p.Version)
	}
	row := func(name string, fr func(s *storeResult) string, fp func(p *peer) string) {
		cells := []string{name}
		if riot != nil {
			cells = append(cells, fr(riot))
		}
		for i := range r.peers {
			cells = append(cells, fp(&r.peers[i]))
		}
		t.add(cells...)
	}
	tasks := func(r rate) string {
		return fmt.Sprintf("%s/s (%s tasks in %s)", thousands(r.perSecond()), count(r.n), r.elapsed.Round(10*time.Millisecond))
	}
	row("throughput, pipelined",
		func(s *storeResult) string { return tasks(s.many) },
		func(p *peer) string { return tasks(p.rate) })
	row("round trip p50, one at a time",
		func(s *storeResult) string { return ms(s.latency.p50) },
		func(p *peer) string { return ms(p.latency.p50) })
	row("round trip p90", func(s *storeResult) string { return ms(s.latency.p90) }, func(p *peer) string { return ms(p.latency.p90) })
	row("round trip p99", func(s *storeResult) string { return ms(s.latency.p99) }, func(p *peer) string { return ms(p.latency.p99) })
	if riot != nil {
		row("riot's advantage: throughput; p50",
			func(*storeResult) string { return "—" },
			func(p *peer) string {
				return fmt.Sprintf("riot ×%s; ×%s", thousands(riot.many.perSecond()/p.rate.perSecond()),
					thousands(float64(p.latency.p50)/float64(riot.latency.p50)))
			})
	}
	t.write(w, format)
	for _, p := range r.peers {
		fmt.Fprintf(w, "%s %s on Python %s: %s; tasks `inc(i)` with distinct arguments and pure=False, submitted with client.map and gathered, then one at a time with client.submit(...).result().\n\n",
			p.Peer, p.Version, p.Python, p.Setup)
	}
}
