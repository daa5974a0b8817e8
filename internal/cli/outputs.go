package cli

import (
	"fmt"

	"github.com/ndbench/ndbench/internal/report"
)

// output is a flag naming a file that a command writes when its run ends.
type output struct{ flag, path string }

// checkOutputs refuses, before any load, an output path that the end of the run could not
// write: a report refused after hours of load would lose what they measured.
func checkOutputs(outs ...output) error {
	for _, o := range outs {
		if o.path == "" {
			continue
		}
		if err := report.CheckWritable(o.path); err != nil {
			return usageError{fmt.Errorf("--%s: %w", o.flag, err)}
		}
	}
	return nil
}
