// Package cli is ndbench's command line: run, serve, drivers, workloads, config, compare
// and version.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/scenario"
	"github.com/ndbench/ndbench/internal/verdict"
)

// streams are the command's outside world, so tests can run commands in-process.
type streams struct {
	out, err io.Writer
	env      []string
	tty      bool // out is a terminal: draw progress bars
	// procs sets GOMAXPROCS (--threads): runtime.GOMAXPROCS in the binary, nil where
	// commands run inside a test's process, whose threads are not theirs to change.
	procs func(int) int
}

// Main runs the ndbench command line with args (without the program name) and returns
// the process exit code, from the one table every command shares (package verdict): 0
// passed, 1 failed, 2 bad usage or config, 3 aborted or interrupted, 4 invalid.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go secondSignal(ctx, stop, os.Stderr, func() { os.Exit(verdict.Aborted) })
	s := &streams{out: os.Stdout, err: os.Stderr, env: os.Environ(), tty: term.IsTerminal(int(os.Stdout.Fd())), procs: runtime.GOMAXPROCS}
	return execute(ctx, args, s)
}

// secondSignal waits for the first signal (ctx, which starts the orderly shutdown), then
// for a second one, which ends the process at once (exit), so a stuck store can never
// hold the terminal hostage. Before it does, it kills the process groups of the
// scenario's hook commands (a fault injector, an undo in progress): they are groups of
// their own, which the terminal's Ctrl-C does not reach, and would outlive ndbench.
func secondSignal(ctx context.Context, stop func(), errOut io.Writer, exit func()) {
	<-ctx.Done()
	// Caught from before stop() hands the signals back, so no second signal finds the
	// default action (death) in between.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	stop()
	<-again
	n := scenario.KillHooks()
	msg := "second interrupt: exiting now, without a report"
	if n > 0 {
		msg += fmt.Sprintf("; killed %d running hook command(s) first (an undo among them did not finish)", n)
	}
	fmt.Fprintln(errOut, msg)
	exit()
}

func execute(ctx context.Context, args []string, s *streams) int {
	root := newRoot(s)
	root.SetArgs(args)
	root.SetOut(s.out)
	root.SetErr(s.err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return verdict.Pass
	}
	// On a terminal the message fits its 100 columns like the rest of the console; piped,
	// each line stays whole for whatever reads it.
	width := 0
	if s.tty {
		width = consoleWidth
	}
	if _, ok := errors.AsType[interruptedError](err); ok {
		// A signal is the user's own doing, not a failure of the tool: said plainly.
		fmt.Fprintln(s.err, wrapLines("", err.Error(), width))
	} else {
		fmt.Fprintln(s.err, wrapLines("error: ", err.Error(), width))
	}
	if hint := suggestFor(root, args, err); hint != "" {
		fmt.Fprintln(s.err, hint)
	}
	var usage usageError
	if ec, ok := errors.AsType[exitError](err); ok {
		return ec.code // a verdict the command reached (run, scenario, autotune: 1, 3, 4)
	}
	var cfg configError
	if _, ok := driver.AsFieldErrors(err); ok || errors.As(err, &usage) || errors.As(err, &cfg) || errors.Is(err, driver.ErrUnknownDriver) {
		return verdict.Usage
	}
	return verdict.Failed
}

// interruptedError is how a command cut short by a signal (Ctrl-C, SIGTERM) ends: what
// it did is printed above, and the message says so, and the exit code, without calling
// it an error.
type interruptedError struct {
	what string // "the run", "the search"
	code int
}

func (e interruptedError) Error() string {
	return fmt.Sprintf("interrupted: %s was stopped by a signal before its end; what it did is above (exit code %d, %s)",
		e.what, e.code, verdict.Name(e.code))
}

// usageError marks errors in how a command was called.
type usageError struct{ error }

// configError marks a configuration that cannot be used, whatever is wrong with it: a
// config file that is missing, unreadable or does not parse (malformed YAML, a duplicate
// key, a bad properties escape), a bad key or value, too many keys. All of them exit 2,
// like bad usage: the user has to fix the input, and a script can tell that from a run
// that failed.
type configError struct{ error }

// Unwrap gives errors.As the field errors inside.
func (e configError) Unwrap() error { return e.error }

func newRoot(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "ndbench",
		Short: "A benchmark for data stores and microservices whose numbers can be trusted",
		Long: `ndbench generates load against data stores and services through driver plugins:
open-loop pacing with intended start times (no coordinated omission), HDR histograms,
data validation, and every workload parameter changeable while it runs.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRunCmd(s), newServeCmd(s), newDriversCmd(s), newWorkloadsCmd(s), newConfigCmd(s), newCompareCmd(s), newScenarioCmd(s), newAutotuneCmd(s), newHistoryCmd(s), newVersionCmd(s))
	argsAreUsage(root)
	return root
}

// argsAreUsage makes a command's argument errors (a stray argument, one missing, a
// mistyped subcommand) usage errors, exit 2, as its flag errors are; cobra returns them as
// plain errors, or shows a group's help and exits 0. A command without an argument rule
// (drivers [NAME...]) takes any, as cobra does, and judges them itself.
func argsAreUsage(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		// A group: an argument is a mistyped subcommand. (With no rule, cobra rejects the
		// root's itself, as a plain error.)
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if near := nearest(args[0], commandNames(cmd)); near != "" {
					return usageError{fmt.Errorf("unknown command %q for %q; did you mean %q?", args[0], cmd.CommandPath(), near)}
				}
				return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		}
	} else {
		check := c.Args
		if check == nil {
			check = cobra.ArbitraryArgs
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}

// version is set at link time (-ldflags "-X github.com/ndbench/ndbench/internal/cli.version=v1.2.3")
// by builds without VCS information, such as the container image's; when empty the version
// comes from Go's build info. It is the one variable the linker writes, never changed at
// run time.
var version string

func toolVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, st := range bi.Settings {
		if st.Key == "vcs.revision" && (v == "" || v == "(devel)") {
			v = st.Value
			if len(v) > 12 {
				v = v[:12]
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return v
}

func newVersionCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			bi, _ := debug.ReadBuildInfo()
			goVersion := "unknown"
			if bi != nil {
				goVersion = bi.GoVersion
			}
			fmt.Fprintf(s.out, "ndbench %s (%s)\n", toolVersion(), goVersion)
			return nil
		},
	}
}
