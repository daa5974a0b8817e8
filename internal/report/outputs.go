package report

import (
	"errors"
	"fmt"
	"io"
)

// Output is one file a command writes when its run ends: a report, its HTML page, JUnit
// XML, a Markdown summary.
type Output struct {
	// Flag is the option that named the file ("report", "out-dir"), for errors.
	Flag string
	Path string
	// What says what the file holds ("JSON report"), for the note once it is written.
	What string
	// Write writes the file's content.
	Write func(io.Writer) error
}

// WriteOutputs is the one writer of every command's outputs (run, serve, scenario,
// autotune, on a node or a fleet): each output with a path is written atomically
// (WriteFileAtomic), in order, and done is called for each one written. A failure does
// not stop the rest: a run of hours whose JSON report cannot be written still leaves its
// HTML report and JUnit file. The error joins every failure, each naming its option and
// path.
func WriteOutputs(outs []Output, done func(Output)) error {
	var errs []error
	for _, o := range outs {
		if o.Path == "" {
			continue
		}
		if err := WriteFileAtomic(o.Path, o.Write); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %s: %w", o.Flag, o.What, err))
			continue
		}
		if done != nil {
			done(o)
		}
	}
	return errors.Join(errs...)
}
