package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/scenario"
)

// flagSet is a flag that stands for a configuration key: it is set as that key, below
// --set, and the effective configuration names the flag as its source.
type flagSet struct{ flag, key, value string }

// setsWithFlags returns the --set arguments with the flags' keys first (so a --set of the
// same key wins), and the label of each flag's key ("flag --driver"), which the
// configuration keeps as that key's source through later changes.
func (c *configSources) setsWithFlags() (sets []string, origins map[string]string) {
	given := map[string]bool{}
	for _, s := range c.sets {
		k, _, _ := strings.Cut(s, "=")
		given[strings.TrimSpace(k)] = true
	}
	flags := slices.Clone(c.flagSets)
	if c.driver != "" {
		flags = append([]flagSet{{"driver", "driver.name", c.driver}}, flags...)
	}
	origins = map[string]string{}
	for _, f := range flags {
		sets = append(sets, f.key+"="+f.value)
		if !given[f.key] {
			origins[f.key] = "flag --" + f.flag
		}
	}
	return append(sets, c.sets...), origins
}

// fromReport reads the configuration a report recorded as the layer a run is rebuilt
// from: every key that was not a default, labelled "report FILE". Secret values were
// redacted in the report and are not taken: they must be given again (env or --set).
func fromReport(path string) (*report.Report, config.Layer, []string, error) {
	l := config.Layer{Name: config.LayerPreset, Source: "report " + path, Values: map[string]string{}}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, l, nil, usageError{fmt.Errorf("--from-report: %w", err)}
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, l, nil, usageError{fmt.Errorf("--from-report %s: not a JSON report: %w", path, err)}
	}
	if r.FormatVersion != report.Version || len(r.Config) == 0 {
		return nil, l, nil, usageError{fmt.Errorf("--from-report %s: a report of ndbench run with its configuration (format version %d) is needed; this one has format version %d and %d configuration keys",
			path, report.Version, r.FormatVersion, len(r.Config))}
	}
	var secrets []string
	for _, e := range r.Config {
		switch {
		case e.Source == defaultSource:
		case e.Secret:
			secrets = append(secrets, e.Key)
		default:
			l.Values[e.Key] = e.Value
		}
	}
	return &r, l, secrets, nil
}

// overlay puts the report's values above the preset's (a --workload beside --from-report
// still gives the keys the report does not have).
func overlay(preset *config.Layer, rep config.Layer) *config.Layer {
	if preset == nil {
		return &rep
	}
	out := config.Layer{Name: config.LayerPreset, Source: preset.Source, Values: map[string]string{}, Origins: map[string]string{}}
	for k, v := range preset.Values {
		out.Values[k] = v
	}
	for k, v := range rep.Values {
		out.Values[k], out.Origins[k] = v, rep.Source
	}
	return &out
}

// applyReport takes the run's length, warm-up and thresholds from the report it is
// rebuilt from, where no flag beside --from-report gives them.
func (f *runFlags) applyReport(cmd *cobra.Command, r *report.Report) error {
	if r.Run == nil {
		return nil
	}
	if !cmd.Flags().Changed("duration") && r.Run.Duration != "" {
		d, err := time.ParseDuration(r.Run.Duration)
		if err != nil {
			return usageError{fmt.Errorf("--from-report %s: run.duration %q: %w", f.fromReport, r.Run.Duration, err)}
		}
		f.duration = d
	}
	if !cmd.Flags().Changed("threshold") {
		for _, t := range r.Run.Thresholds {
			f.reportChecks = append(f.reportChecks, scenario.RunCheck{Check: t, Field: "run.thresholds in " + f.fromReport, Source: "report " + f.fromReport})
		}
	}
	return nil
}

// secretFlags are flags whose values may hold credentials: reports show them redacted.
var secretFlags = []string{"otlp-header"}

// runRecord is how the run was called, for its report.
func (f *runFlags) runRecord(cmd *cobra.Command, checks []scenario.RunCheck) *report.Run {
	rec := &report.Run{Duration: f.duration.String(), Warmup: f.warmup.String(), Backfill: f.backfill, Flags: []report.Flag{}, FromReport: f.fromReport}
	for _, c := range checks {
		rec.Thresholds = append(rec.Thresholds, c.Check)
	}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name == "set" {
			return // each --set is in the configuration, under its key, redacted when secret
		}
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ", ")
		}
		switch {
		case slices.Contains(secretFlags, fl.Name):
			v = "(redacted)"
		case fl.Name == "otlp-endpoint":
			if u, err := url.Parse(v); err == nil {
				v = u.Redacted()
			}
		}
		rec.Flags = append(rec.Flags, report.Flag{Name: "--" + fl.Name, Value: v})
	})
	return rec
}

// defaultSource is the source config names in its entries for defaults.
const defaultSource = "default"
