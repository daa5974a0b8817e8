package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config/presets"
)

func newWorkloadsCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "workloads [NAME]",
		Short: "List the built-in workload presets (--workload NAME), or print one as YAML",
		Long: `List the built-in workload presets: NDBench's own defaults and YCSB's core workloads
A to F, each with what it is and the keys it sets. With a NAME, print that preset's YAML
file, with the comments that cite where its numbers come from and what is approximate.

'ndbench run', 'serve' and 'config' apply a preset with --workload NAME (or --workload
FILE, a YAML or .properties file with the keys of a config file). Its values rank just
above the built-in defaults: --config, NDBENCH_* variables and --set override any of
them ('ndbench config --workload ycsb-a' shows each value's source).`,
		Example: `  ndbench workloads
  ndbench workloads ycsb-a > my-workload.yaml
  ndbench run --driver redis --workload ycsb-a --set workload.readRate=5000 --set workload.writeRate=5000`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("at most one preset name, got %d: %s", len(args), strings.Join(args, " "))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				p, ok := presets.Lookup(args[0])
				if !ok {
					return usageError{fmt.Errorf("no built-in preset %q; the presets are %s", args[0], strings.Join(presets.Names(), ", "))}
				}
				_, err := s.out.Write(p.Text)
				return err
			}
			tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION")
			for _, p := range presets.All() {
				l, err := p.Layer()
				if err != nil {
					return err
				}
				keys, err := p.Keys()
				if err != nil {
					return err
				}
				sets := make([]string, len(keys))
				for i, k := range keys {
					sets[i] = k + "=" + l.Values[k]
				}
				fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Description)
				for _, line := range wrap(append([]string{"sets"}, sets...), 100) {
					fmt.Fprintf(tw, "\t  %s\n", line)
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "\nApply one with --workload NAME (run, serve, config); --config, NDBENCH_* and --set override its values.\n"+
				"The YCSB presets run open loop at 1000 operations/s in total, split by the workload's mix: scale both rates with --set.\n"+
				"ycsb-e's reads run the operation scan, which only drivers declaring it offer (in this build: %s); "+
				"with any other driver the configuration is rejected, listing the driver's operations.\n",
				strings.Join(driversWith("scan"), ", "))
			return nil
		},
	}
}

// driversWith returns the registered drivers that offer operation op, or "none".
func driversWith(op string) []string {
	var names []string
	for _, n := range driver.Names() {
		if def, ok := driver.Lookup(n); ok {
			if _, _, ok := def.Operation(op); ok {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

// wrap joins words with blanks into lines of at most width bytes (a longer word gets a
// line of its own): a preset sets a dozen keys, too many for one terminal line.
func wrap(words []string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range words {
		if cur != "" && len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
