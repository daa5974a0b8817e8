package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/internal/config/presets"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/verdict"
	"github.com/ndbench/ndbench/internal/web"
)

// output is a flag naming a file that a command writes when its run ends.
type output struct{ flag, path string }

// input is a file that a command reads; what says which, as an error names it ("the
// --config file").
type input struct{ what, path string }

// checkOutputs refuses, before any load, an output path that the end of the run could not
// write (a report refused after hours of load would lose what they measured), one that
// names a file the command reads (the run would destroy its own configuration), and two
// outputs naming one file (the later would silently replace the earlier). An output that
// replaces an existing file is said on stderr, once the whole set is accepted: rerunning
// into the same report path is common, and not refused.
func checkOutputs(stderr io.Writer, ins []input, outs ...output) error {
	var replaced []output
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		for _, in := range ins {
			if in.path != "" && sameFile(o.path, in.path) {
				return usageError{fmt.Errorf("--%s: %s is %s; allowed: a path that no input of the command names (an output never replaces an input)", o.flag, o.path, in.what)}
			}
		}
		for _, prev := range outs[:i] {
			if prev.path != "" && sameFile(o.path, prev.path) {
				return usageError{fmt.Errorf("--%s: %s is also the file of --%s; allowed: a path of its own for each output", o.flag, o.path, prev.flag)}
			}
		}
		if err := report.CheckWritable(o.path); err != nil {
			return usageError{fmt.Errorf("--%s: %w", o.flag, err)}
		}
		if fi, err := os.Stat(o.path); err == nil && fi.Mode().IsRegular() {
			replaced = append(replaced, o)
		}
	}
	for _, o := range replaced {
		fmt.Fprintf(stderr, "note: --%s %s exists; this run's output replaces it\n", o.flag, o.path)
	}
	return nil
}

// inputs are the files the configuration flags name: the --config file, and the
// --workload preset when it is a file rather than a built-in name.
func (c *configSources) inputs() []input {
	ins := []input{{"the --config file", c.file}}
	if c.workload != "" {
		if _, builtin := presets.Lookup(c.workload); !builtin {
			ins = append(ins, input{"the --workload file", c.workload})
		}
	}
	return ins
}

// discoveryInput is the clusters.json file a file: discovery reads ("" for another kind).
func discoveryInput(spec string) input {
	path, ok := strings.CutPrefix(strings.TrimSpace(spec), "file:")
	if !ok {
		path = ""
	}
	return input{"the --discovery file", path}
}

// sameFile reports whether a and b name one file: the same absolute path once symlinks
// are resolved (as far as the path exists: an output not written yet resolves through its
// directory), or, when both exist, the same file by identity (a hard link, a path that
// differs only in case on a case-insensitive file system).
func sameFile(a, b string) bool {
	if resolve(a) == resolve(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

func resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// outputFlags are the files a command writes when its run ends: one option set for run,
// serve, scenario and autotune, so that each names, checks and writes its outputs alike,
// through the one writer (report.WriteOutputs).
type outputFlags struct {
	report, reportHTML, junit, markdown, outDir string
	// offered is the help of each output the command offers, in kinds' order ("" when
	// it offers none of that kind); resolved are the outputs after --out-dir.
	offered  [4]string
	resolved []output
}

// outputKinds are the outputs a command may offer, in order: the flag, the file --out-dir
// gives it, and what it holds (in the note once written).
var outputKinds = [4]struct{ flag, file, what string }{
	{"report", "report.json", "report"},
	{"report-html", "report.html", "HTML report"},
	{"junit", "junit.xml", "JUnit XML"},
	{"markdown", "summary.md", "Markdown summary"},
}

// outputHelp is the help of each output a command offers ("" for one it does not).
type outputHelp struct{ report, reportHTML, junit, markdown string }

func (o *outputFlags) bind(cmd *cobra.Command, h outputHelp) {
	o.offered = [4]string{h.report, h.reportHTML, h.junit, h.markdown}
	var files []string
	for i, p := range []*string{&o.report, &o.reportHTML, &o.junit, &o.markdown} {
		if o.offered[i] == "" {
			continue
		}
		cmd.Flags().StringVar(p, outputKinds[i].flag, "", o.offered[i])
		files = append(files, outputKinds[i].file)
	}
	cmd.Flags().StringVar(&o.outDir, "out-dir", "", "write "+strings.Join(files, ", ")+" into this directory (created if missing; a file's own flag names it elsewhere)")
}

// resolve gives each offered output without a path of its own its file in --out-dir
// (created), and returns every output, named by the flag that set its path, for
// checkOutputs.
func (o *outputFlags) resolve() ([]output, error) {
	paths := []*string{&o.report, &o.reportHTML, &o.junit, &o.markdown}
	if o.outDir != "" {
		if err := os.MkdirAll(o.outDir, 0o755); err != nil {
			return nil, usageError{fmt.Errorf("--out-dir: %w", err)}
		}
	}
	o.resolved = o.resolved[:0]
	for i, p := range paths {
		if o.offered[i] == "" {
			o.resolved = append(o.resolved, output{outputKinds[i].flag, ""})
			continue
		}
		out := output{outputKinds[i].flag, *p}
		if out.path == "" && o.outDir != "" {
			out = output{"out-dir", filepath.Join(o.outDir, outputKinds[i].file)}
			*p = out.path
		}
		o.resolved = append(o.resolved, out)
	}
	return o.resolved, nil
}

// any reports whether an output is asked for.
func (o *outputFlags) any() bool {
	return o.report != "" || o.reportHTML != "" || o.junit != "" || o.markdown != ""
}

// contents are what a command writes in each kind of output (nil: none of that kind).
type contents struct{ report, reportHTML, junit, markdown func(io.Writer) error }

// write writes the outputs with the one writer (report.WriteOutputs), noting each one
// written on out. A failure does not stop the others; it exits 2 (the table of package
// verdict: unwritable outputs), naming each path that failed.
func (o *outputFlags) write(out io.Writer, c contents) error {
	if o.resolved == nil {
		if _, err := o.resolve(); err != nil {
			return err
		}
	}
	var outs []report.Output
	for i, fn := range []func(io.Writer) error{c.report, c.reportHTML, c.junit, c.markdown} {
		if fn == nil || o.resolved[i].path == "" {
			continue
		}
		outs = append(outs, report.Output{Flag: o.resolved[i].flag, Path: o.resolved[i].path, What: outputKinds[i].what, Write: fn})
	}
	err := report.WriteOutputs(outs, func(w report.Output) { fmt.Fprintf(out, "%s written to %s\n", w.What, w.Path) })
	if err != nil {
		return exitError{verdict.Usage, fmt.Errorf("write the outputs: %w", err)}
	}
	return nil
}

// jsonReport is the content of a JSON report of r.
func jsonReport(r *report.Report) func(io.Writer) error {
	return func(w io.Writer) error { return report.Write(w, r) }
}

// htmlReport is the content of an HTML report of r.
func htmlReport(r *report.Report) func(io.Writer) error {
	return func(w io.Writer) error { return report.WriteHTML(w, r, report.Charts(web.Charts())) }
}
