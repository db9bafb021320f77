// Package cli is the wiring that riot's commands (riotd, riot-worker)
// share around cobra: exit statuses (0 success, 1 the work failed, 2 bad
// usage), one-line usage errors with a pointer to --help, their help
// layout, --version, and the one-dash long flags (-port) that they took
// before they moved to pflag. Each command's flags, and the checks and
// help text of their options, are the packages' own (tracker.AddFlags,
// worker.AddFlags, job.AddFlags).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/riot-go/riot/internal/cliflag"
	"github.com/riot-go/riot/internal/version"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError is bad usage: Execute prints it on one line after the
// command's name, then Hint (by default "run 'COMMAND --help' for the
// flags"), and exits with ExitUsage. Errors that cobra and pflag return
// (an unknown flag, a bad value, an unknown subcommand) are usage errors
// too.
type UsageError struct {
	Err  error
	Hint string
}

// Error returns the wrapped error's text.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usage returns err as a UsageError.
func Usage(err error) error { return &UsageError{Err: err} }

// ExitError ends a command with Code: Execute prints Err, if not nil,
// after the command's name (what failed was otherwise said already).
type ExitError struct {
	Code int
	Err  error
}

// Error returns Err's text, or the exit status when Err is nil.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *ExitError) Unwrap() error { return e.Err }

// Fail returns an ExitError of ExitFailure that prints err.
func Fail(err error) error { return &ExitError{Code: ExitFailure, Err: err} }

// Exit returns an ExitError of code that prints nothing more.
func Exit(code int) error { return &ExitError{Code: code} }

const (
	annotationHelp = "riot.help"      // the command's help is its Long text and its flags
	annotationArgs = "riot.flagsstop" // the command's flags end at its first argument
)

// SetHelp makes text the help of c, followed by its flags. text says
// what c does and how to call it, and ends with a newline.
func SetHelp(c *cobra.Command, text string) {
	c.Long = text
	annotate(c, annotationHelp)
}

// FlagsBeforeArgs makes c's flags end at its first argument, as those of
// a command whose arguments are a script's: what follows the script's
// name is the script's, flags included.
func FlagsBeforeArgs(c *cobra.Command) {
	c.Flags().SetInterspersed(false)
	annotate(c, annotationArgs)
}

func annotate(c *cobra.Command, key string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = "true"
}

// VersionCommand returns the command "version" of program, which prints
// what program --version does.
func VersionCommand(program string) *cobra.Command {
	c := &cobra.Command{
		Use:   "version",
		Short: "print the version and the build",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.OutOrStdout(), version.Line(c.Root().Name()))
			return err
		},
	}
	SetHelp(c, "Usage: "+program+" version\n\nPrints the version of this build, as --version does: the module's version,\n"+
		"the VCS revision and its time, whether the tree had local changes, and the\nGo version.\n")
	return c
}

// Execute runs root, the top of a command tree, with args (without the
// program's name), writing to stdout and stderr, and returns the exit
// status: ExitOK, the Code of an ExitError, or ExitUsage for a usage
// error. Commands' RunE report failures with Fail or Exit and bad usage
// with Usage (or any other error). Execute gives root --version (and -v)
// from the build's information (package version), help in riot's layout
// for the commands given one by SetHelp, and reads one-dash long flags
// (-port) as two-dash ones.
func Execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.Version = version.Read().String()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c.Annotations[annotationHelp] == "" {
			cobraHelp(c, args)
			return
		}
		w := c.OutOrStdout()
		fmt.Fprint(w, c.Long)
		if c.HasAvailableLocalFlags() {
			fmt.Fprintf(w, "\nFlags:\n%s", FlagUsages(c.LocalFlags()))
		}
	})
	args = normalize(root, args)
	root.SetArgs(args)
	// cobra's completion command, made now rather than by ExecuteC, so
	// that an unknown shell is bad usage, not its help.
	root.InitDefaultCompletionCmd(args...)
	if comp := subcommand(root, "completion"); comp != nil && comp.Run == nil && comp.RunE == nil {
		comp.RunE = func(c *cobra.Command, _ []string) error { return c.Help() } // no shell: the help; NoArgs refuses others
	}
	c, err := root.ExecuteContextC(ctx)
	if c == nil {
		c = root
	}
	var exit *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &exit):
		if exit.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.CommandPath(), exit.Err)
		}
		return exit.Code
	}
	hint := fmt.Sprintf("run '%s --help' for the flags", c.CommandPath())
	if u := (*UsageError)(nil); errors.As(err, &u) && u.Hint != "" {
		hint = u.Hint
	}
	fmt.Fprintf(stderr, "%s: %v\n%s\n", c.CommandPath(), err, hint)
	return ExitUsage
}

// FlagUsages lists fs's flags as pflag does (FlagSet.FlagUsages), a
// boolean flag as --name alone, without pflag's "[=true|false]".
func FlagUsages(fs *pflag.FlagSet) string {
	shown := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		g := *f
		if f.Value.Type() == "bool" {
			g.Value = plainBool{f.Value}
		}
		shown.AddFlag(&g)
	})
	return shown.FlagUsages()
}

// plainBool shows a bool flag's value as pflag shows a boolfunc's: no
// placeholder, no "[=true|false]".
type plainBool struct{ pflag.Value }

func (plainBool) Type() string     { return "boolfunc" }
func (plainBool) IsBoolFlag() bool { return true }

// normalize rewrites the one-dash long flags in args as pflag reads them
// (cliflag.NormalizeFlag), each with the flags of the command it belongs
// to: a subcommand's name in the command's place switches to its flags,
// and a command made by FlagsBeforeArgs keeps the rest as they are from
// its first argument on.
func normalize(root *cobra.Command, args []string) []string {
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	c := root
	out := make([]string, 0, len(args))
	first := true // the next argument that is not a flag is in the command's place
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case len(a) > 1 && a[0] == '-':
			n, value := cliflag.NormalizeFlag(c.Flags(), a)
			out = append(out, n)
			if value && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		if first {
			if sub := subcommand(c, a); sub != nil {
				sub.InitDefaultHelpFlag()
				c = sub
				out = append(out, a)
				continue
			}
		}
		if c.Annotations[annotationArgs] != "" {
			return append(out, args[i:]...)
		}
		first = false
		out = append(out, a)
	}
	return out
}

// subcommand returns c's subcommand called name, or nil.
func subcommand(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}
