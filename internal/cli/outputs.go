package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndbench/ndbench/internal/config/presets"
	"github.com/ndbench/ndbench/internal/report"
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
