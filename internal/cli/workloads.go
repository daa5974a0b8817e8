package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/keydist"
	"github.com/ndbench/ndbench/internal/config/presets"
	"github.com/ndbench/ndbench/internal/workload"
)

func newWorkloadsCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "workloads [NAME]",
		Short: "List the built-in workload presets (--workload NAME) and key patterns, or print a preset as YAML",
		Long: `List the built-in workload presets: NDBench's own defaults and YCSB's core workloads
A to F, each with what it is and the keys it sets; then the key patterns (workload.pattern),
the built-in ones and any a plugin registered, with their options. With a NAME, print that
preset's YAML file, with the comments that cite where its numbers come from and what is
approximate.

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
			if err := writePatterns(s.out); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "\nApply one with --workload NAME (run, serve, config); --config, NDBENCH_* and --set override its values.\n"+
				"The YCSB presets run open loop at 1000 operations/s in total, split by the workload's mix: scale both rates with --set.\n"+
				"ycsb-e's reads run the operation scan, which only drivers declaring it offer (in this build: %s); "+
				"with any other driver the configuration is rejected, listing the driver's operations "+
				"(redis scans with drivers.redis.scanIndex=true; see ndbench drivers).\n"+
				"ycsb-d's and ycsb-e's inserts write new keys beyond numKeys: the keyspace grows, and the run reports its size.\n",
				strings.Join(driversWith("scan"), ", "))
			return nil
		},
	}
}

// writePatterns lists the key patterns (workload.pattern): the built-ins and any a plugin
// registered, with their aliases and options, so a custom distribution is found where the
// presets that use patterns are.
func writePatterns(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPATTERN\tKEYS CHOSEN (workload.pattern)")
	for _, d := range keydist.All() {
		name := d.Name
		if len(d.Aliases) > 0 {
			name += " (" + strings.Join(d.Aliases, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, d.Summary)
		schema, err := d.Schema()
		if err != nil {
			return fmt.Errorf("options of pattern %s: %w", d.Name, err)
		}
		if len(schema) == 0 {
			continue
		}
		opts := []string{"options"}
		for _, o := range schema {
			// A plugin's own option is one name=value of workload.patternOptions.
			key := workload.OptionKey(o.Name)
			text := key + "=" + o.Default
			if key != "workload."+o.Name {
				text = key + "=" + o.Name + "=" + o.Default
			}
			if o.Min != "" || o.Max != "" {
				text += " [" + o.Min + ".." + o.Max + "]"
			}
			opts = append(opts, text)
		}
		for _, line := range wrap(opts, 100) {
			fmt.Fprintf(tw, "\t  %s\n", line)
		}
	}
	return tw.Flush()
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
