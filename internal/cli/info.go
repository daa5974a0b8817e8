package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

func newDriversCmd(s *streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "drivers [NAME...]",
		Short: "List drivers, their operations and their options (name, type, default, live, help)",
		RunE: func(_ *cobra.Command, names []string) error {
			if len(names) == 0 {
				names = driver.Names()
			}
			type listed struct {
				Name       string             `json:"name"`
				Summary    string             `json:"summary"`
				Operations []driver.Operation `json:"operations"`
				Options    []driver.Option    `json:"options"`
			}
			var all []listed
			for _, n := range names {
				def, ok := driver.Lookup(n)
				if !ok {
					return driver.UnknownDriverError(n)
				}
				schema, err := driver.Schema(def.NewOptions())
				if err != nil {
					return err
				}
				all = append(all, listed{Name: n, Summary: def.Summary, Operations: def.AllOperations(), Options: schema})
			}
			if asJSON {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(all)
			}
			for i, d := range all {
				if i > 0 {
					fmt.Fprintln(s.out)
				}
				fmt.Fprintf(s.out, "%s: %s\n", d.Name, d.Summary)
				tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "  OPERATION\tKIND\tHELP")
				for _, o := range d.Operations {
					fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Name, o.Kind, o.Help)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(tw, "  OPTION\tTYPE\tDEFAULT\tLIVE\tHELP")
				for _, o := range d.Options {
					help := o.Help
					if len(o.Enum) > 0 {
						help += " (" + strings.Join(o.Enum, ", ") + ")"
					}
					if o.Secret {
						help += " [secret]"
					}
					live := ""
					if o.Live {
						live = "live"
					}
					fmt.Fprintf(tw, "  drivers.%s.%s\t%s\t%s\t%s\t%s\n", d.Name, o.Name, o.Type, o.Default, live, help)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newConfigCmd(s *streams) *cobra.Command {
	var src configSources
	var asJSON, backfill bool
	var warmup time.Duration
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value comes from",
		Long: `Print the effective configuration: every key with its value and its source
(default, preset, file, env NDBENCH_..., --set). Secrets are redacted. The same flags as
'ndbench run' apply, so this shows exactly what a run would use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// run's own flags that stand for configuration keys, so the same command
			// line shows what the run would use.
			if cmd.Flags().Changed("backfill") {
				src.flagSets = append(src.flagSets, flagSet{"backfill", "workload.backfill", fmt.Sprint(backfill)})
			}
			if cmd.Flags().Changed("warmup") {
				src.flagSets = append(src.flagSets, flagSet{"warmup", "workload.warmup", warmup.String()})
			}
			snap, err := src.loadFile(s.env, true)
			if err != nil {
				return err
			}
			// A config file's thresholds: are run's: checked and shown as run reads them.
			checks, err := fileThresholds(src.file)
			if err != nil {
				return err
			}
			if _, err := newRunJudge(checks, snap.Config.Workload); err != nil {
				return err
			}
			var thresholds []string
			for _, c := range checks {
				thresholds = append(thresholds, c.Check+" ("+c.Source+")")
			}
			if asJSON {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Entries    []config.Entry `json:"entries"`
					Thresholds []string       `json:"thresholds,omitempty"`
					Notices    []string       `json:"notices"`
				}{snap.Entries, thresholds, snap.Notices})
			}
			tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, e := range snap.Entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Value, e.Source)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, t := range thresholds {
				fmt.Fprintln(s.out, "threshold:", t)
			}
			for _, n := range snap.Notices {
				fmt.Fprintln(s.out, "note:", n)
			}
			return nil
		},
	}
	src.bind(cmd)
	cmd.Flags().BoolVar(&backfill, "backfill", false, "as run's --backfill (same as --set workload.backfill=true)")
	cmd.Flags().DurationVar(&warmup, "warmup", 0, "as run's --warmup (same as --set workload.warmup=D)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
