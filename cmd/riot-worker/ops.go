package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/internal/cli"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/apiclient"
	"github.com/riot-go/riot/units"
)

// The operator's commands: status, jobs, workunits, cancel and logs ask
// a tracker's HTTP API (docs/http.md), with the address, token and TLS
// flags and variables of eval.

// opsFlags are the flags every operator command has.
type opsFlags struct {
	tracker, token, tlsCA string
	json                  bool
}

func addOpsFlags(c *cobra.Command, withJSON bool) *opsFlags {
	f := &opsFlags{}
	fs := c.Flags()
	fs.StringVar(&f.tracker, "tracker", os.Getenv("RIOT_TRACKER"), "the tracker, `HOST[:PORT]` (default: $RIOT_TRACKER, else localhost)")
	fs.StringVar(&f.token, "token", "", "a master's or a viewer's `token` (default: $RIOT_TOKEN)")
	fs.StringVar(&f.tlsCA, "tls-ca", os.Getenv("RIOT_TLS_CA"), "reach the tracker over TLS, trusting the authority in this PEM `FILE` (default: $RIOT_TLS_CA)")
	if withJSON {
		fs.BoolVar(&f.json, "json", false, "print the API's JSON, for scripts")
	}
	return f
}

// api returns a client of the tracker the flags name (host, when not "",
// overrides --tracker).
func (f *opsFlags) api(host string) (*apiclient.Client, error) {
	addr := f.tracker
	if host != "" {
		addr = host
	}
	if addr == "" {
		addr = "localhost"
	}
	token := f.token
	if token == "" {
		token = os.Getenv("RIOT_TOKEN")
	}
	opts := apiclient.Options{Token: token}
	if f.tlsCA != "" {
		conf, err := client.TLSConfigWithCA(f.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		opts.TLSConfig = conf
	}
	c, err := apiclient.New(addr, opts)
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("--tracker %s: %w", addr, err))
	}
	return c, nil
}

// failed turns an API error into the command's failure, with a hint
// for the usual causes.
func failed(err error) error {
	var ae *apiclient.Error
	if errors.As(err, &ae) {
		switch ae.Status {
		case 401:
			return cli.Fail(fmt.Errorf("%s: give a master's or a viewer's token (--token or $RIOT_TOKEN)", ae.Message))
		case 403:
			return cli.Fail(errors.New(ae.Message))
		case 404:
			return cli.Fail(errors.New(ae.Message))
		}
		return cli.Fail(err)
	}
	if strings.Contains(err.Error(), "connection refused") {
		return cli.Fail(fmt.Errorf("%w (is riotd running there? give its address with --tracker or $RIOT_TRACKER)", err))
	}
	return cli.Fail(err)
}

func printJSON(w io.Writer, raw json.RawMessage) error {
	_, err := w.Write(raw)
	return err
}

func when(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	d := time.Since(t)
	if d < 0 {
		d = 0
	}
	return units.FormatDuration(d.Round(time.Second)) + " ago"
}

func statusCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "status [HOST[:PORT]]",
		Short: "show the tracker at a glance: workers, slots, workunits, jobs in progress",
		Args:  cobra.MaximumNArgs(1),
	}
	cli.SetHelp(c, `Usage: riot-worker status [flags] [HOST[:PORT]]

Shows the tracker at a glance, as 'ray status' does: its workunits by status
and rate, its workers with their slots, GPUs and memory, and the jobs in
progress. HOST is the tracker (default: --tracker, $RIOT_TRACKER, else
localhost). With --token-file on riotd, give a master's or a viewer's token.
`)
	f := addOpsFlags(c, true)
	c.RunE = func(c *cobra.Command, args []string) error {
		host := ""
		if len(args) == 1 {
			host = args[0]
		}
		api, err := f.api(host)
		if err != nil {
			return err
		}
		ctx := c.Context()
		if f.json {
			raw, err := api.Raw(ctx, "/api/v1/overview")
			if err != nil {
				return failed(err)
			}
			return printJSON(c.OutOrStdout(), raw)
		}
		ov, err := api.Overview(ctx)
		if err != nil {
			return failed(err)
		}
		workers, err := api.Workers(ctx)
		if err != nil {
			return failed(err)
		}
		writeStatus(c.OutOrStdout(), ov, workers)
		return nil
	}
	return c
}

func writeStatus(w io.Writer, ov tracker.Overview, workers []tracker.WorkerInfo) {
	store := "memory only"
	if ov.Durable {
		store = "durable"
	}
	fmt.Fprintf(w, "riotd %s, up %s, %s\n", ov.Tracker, units.FormatDuration(time.Duration(ov.UptimeSeconds*float64(time.Second)).Round(time.Second)), store)
	wu := ov.Workunits
	fmt.Fprintf(w, "workunits: %d waiting, %d running, %d done, %d error; %.1f finished/s\n", wu.Waiting, wu.Running, wu.Done, wu.Error, ov.FinishedPerSecond)
	fmt.Fprintf(w, "workers: %d, %d slots: %d running, %d prefetched\n", ov.Workers.Count, ov.Workers.Slots, ov.Workers.Running, ov.Workers.Prefetched)
	if len(workers) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tSLOTS\tRUNNING\tPREFETCHED\tGPUS\tMEMORY\tDONE\tFAILED\tADDRESS")
		for _, wk := range workers {
			mem := "-"
			switch {
			case wk.MemoryInUse > 0 && wk.MemoryLimit > 0:
				mem = units.FormatSize(wk.MemoryInUse) + " of " + units.FormatSize(wk.MemoryLimit)
			case wk.MemoryInUse > 0:
				mem = units.FormatSize(wk.MemoryInUse)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\n", wk.Name, wk.Slots, wk.Running, wk.Prefetched, wk.GPUs, mem, wk.Done, wk.Failed, wk.Remote)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "jobs in progress: %d\n", len(ov.Jobs))
	if len(ov.Jobs) > 0 {
		writeJobs(w, ov.Jobs)
	}
}

func writeJobs(w io.Writer, jobs []tracker.JobInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tNAME\tSTATE\tMASTER\tDONE\tFAILED\tWAITING\tRUNNING\tFROM MEMORY\tRATE\tETA\tSTARTED")
	for _, j := range jobs {
		eta := "-"
		if j.ETASeconds != nil {
			eta = units.FormatDuration(time.Duration(*j.ETASeconds * float64(time.Second)).Round(time.Second))
		}
		rate := "-"
		if j.State == "running" {
			rate = fmt.Sprintf("%.1f/s", j.FinishedPerSecond)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", j.ID, j.Name, j.State, j.Master,
			j.Done, j.Failed, j.Waiting, j.Running, j.FromMemory, rate, eta, when(j.Started))
	}
	tw.Flush()
}

func jobsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "jobs",
		Short: "list the tracker's jobs, running and recently ended",
		Args:  cobra.NoArgs,
	}
	cli.SetHelp(c, `Usage: riot-worker jobs [flags]

Lists the tracker's jobs: each job script's run, or Go program's session,
with its counts, rate and ETA; those in progress first. Ended jobs are kept
for an hour.
`)
	f := addOpsFlags(c, true)
	c.RunE = func(c *cobra.Command, _ []string) error {
		api, err := f.api("")
		if err != nil {
			return err
		}
		if f.json {
			raw, err := api.Raw(c.Context(), "/api/v1/jobs")
			if err != nil {
				return failed(err)
			}
			return printJSON(c.OutOrStdout(), raw)
		}
		jobs, err := api.Jobs(c.Context())
		if err != nil {
			return failed(err)
		}
		if len(jobs) == 0 {
			fmt.Fprintln(c.OutOrStdout(), "no jobs")
			return nil
		}
		writeJobs(c.OutOrStdout(), jobs)
		return nil
	}
	return c
}

func workunitsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "workunits",
		Short: "list workunits, newest first, by job, status, worker or error",
		Args:  cobra.NoArgs,
	}
	cli.SetHelp(c, `Usage: riot-worker workunits [flags]

Lists the tracker's workunits, newest first, a page at a time (--limit; the
next page with --cursor, as the last line says).
`)
	f := addOpsFlags(c, true)
	var filter apiclient.Filter
	var jobRef string
	fs := c.Flags()
	fs.StringVar(&jobRef, "job", "", "only the workunits of this job (its `name` or id)")
	fs.StringVar(&filter.Status, "status", "", "only workunits of this `status`: waiting, running, done or error (several separated by commas)")
	fs.StringVar(&filter.Worker, "worker", "", "only the workunits this `worker` holds or finished")
	fs.StringVar(&filter.Error, "error", "", "only the failed workunits whose error has this `text`")
	fs.IntVar(&filter.Limit, "limit", 50, "the most to list, up to 500")
	fs.StringVar(&filter.Cursor, "cursor", "", "list from here on (the `cursor` the last page gave)")
	c.RunE = func(c *cobra.Command, _ []string) error {
		api, err := f.api("")
		if err != nil {
			return err
		}
		ctx := c.Context()
		if jobRef != "" {
			j, err := api.FindJob(ctx, jobRef)
			if err != nil {
				return failed(err)
			}
			filter.Job = j.ID
		}
		page, err := api.Workunits(ctx, filter)
		if err != nil {
			return failed(err)
		}
		w := c.OutOrStdout()
		if f.json {
			return json.NewEncoder(w).Encode(page)
		}
		if len(page.Workunits) == 0 {
			fmt.Fprintln(w, "no workunits")
		} else {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tSTATUS\tJOB\tWORKER\tCHANGED\tATTEMPTS\tERROR")
			for _, wu := range page.Workunits {
				msg := ""
				if wu.Error != nil {
					msg = oneLine(wu.Error.Name+": "+wu.Error.Message, 80)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", wu.Short, wu.Status, orDash(wu.Job), orDash(wu.Worker), when(wu.Changed), wu.Attempts, msg)
			}
			tw.Flush()
		}
		if page.Next != "" {
			more := "more"
			if page.Partial {
				more = "more may follow (the tracker looked at its first 100,000)"
			}
			fmt.Fprintf(w, "(%s: --cursor %s)\n", more, page.Next)
		}
		return nil
	}
	return c
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}

// hexKey matches what may be a workunit's key: 12 to 64 hex digits.
var hexKey = regexp.MustCompile(`^[0-9a-fA-F]{12,64}$`)

func cancelCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "cancel JOB|KEY...",
		Short: "cancel a job's unfinished workunits, or workunits by key, from outside the job",
		Args:  cobra.MinimumNArgs(1),
	}
	cli.SetHelp(c, `Usage: riot-worker cancel [flags] JOB|KEY...

Cancels, from outside the job, the waiting and running workunits of a job
(its name, as riot-worker jobs shows it, or its id), or workunits by key
(64 hex digits, or the first 12 or more of a recent one's). Their masters see
them fail with a Canceled error. Needs a master's token where riotd checks
tokens; with --shared-cache off, a master's token cancels its own
credential's work only.
`)
	f := addOpsFlags(c, false)
	c.RunE = func(c *cobra.Command, args []string) error {
		api, err := f.api("")
		if err != nil {
			return err
		}
		ctx := c.Context()
		w := c.OutOrStdout()
		for _, ref := range args {
			if err := cancelOne(ctx, api, w, ref); err != nil {
				return failed(err)
			}
		}
		return nil
	}
	return c
}

func cancelOne(ctx context.Context, api *apiclient.Client, w io.Writer, ref string) error {
	if hexKey.MatchString(ref) {
		n, err := api.CancelWorkunit(ctx, ref)
		switch {
		case err == nil:
			if n == 0 {
				fmt.Fprintf(w, "%s: finished already; nothing to cancel\n", ref)
			} else {
				fmt.Fprintf(w, "%s: canceled\n", ref)
			}
			return nil
		case !apiclient.IsNotFound(err):
			return err
		}
		// Not a workunit's key: maybe a job named like one.
	}
	j, err := api.FindJob(ctx, ref)
	if err != nil {
		return err
	}
	n, err := api.CancelJob(ctx, j.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "job %s (%s): %d workunits canceled\n", j.Name, j.ID, n)
	return nil
}

func logsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "logs KEY",
		Short: "show a workunit's console lines, its result or its error",
		Args:  cobra.ExactArgs(1),
	}
	cli.SetHelp(c, `Usage: riot-worker logs [flags] KEY

Shows a workunit's status, its console lines (kept for the recent 4,096
finished workunits), and its result or its error with the stack and the
worker. KEY is 64 hex digits, or the first 12 or more of a recent one's. Exits
1 when the workunit failed.
`)
	f := addOpsFlags(c, true)
	c.RunE = func(c *cobra.Command, args []string) error {
		api, err := f.api("")
		if err != nil {
			return err
		}
		ctx := c.Context()
		w := c.OutOrStdout()
		if f.json {
			raw, err := api.Raw(ctx, "/api/v1/workunits/"+url.PathEscape(args[0]))
			if err != nil {
				return failed(err)
			}
			return printJSON(w, raw)
		}
		d, err := api.Workunit(ctx, args[0])
		if err != nil {
			return failed(err)
		}
		fmt.Fprintf(w, "workunit %s: %s", d.Key, d.Status)
		if d.Worker != "" {
			fmt.Fprintf(w, " on %s", d.Worker)
		}
		if d.Job != "" {
			fmt.Fprintf(w, ", job %s", d.Job)
		}
		fmt.Fprintln(w)
		for _, l := range d.Console {
			for _, line := range strings.Split(l.Text, "\n") {
				fmt.Fprintf(w, "[%s] %s\n", l.Level, line)
			}
		}
		if d.Result != nil {
			fmt.Fprintf(w, "result: %s\n", d.Result.Text)
		}
		if e := d.Error; e != nil {
			stack := e.Stack
			if stack == "" {
				stack = e.Name + ": " + e.Message
			}
			fmt.Fprintln(w, stack)
			return cli.Exit(cli.ExitFailure)
		}
		return nil
	}
	return c
}
