package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

func newDriversCmd(s *streams) *cobra.Command {
	var asJSON, wide bool
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
			width := consoleWidth
			if wide {
				width = 0
			}
			for i, d := range all {
				if i > 0 {
					fmt.Fprintln(s.out)
				}
				fmt.Fprintln(s.out, wrapText("", d.Name+": "+d.Summary, width))
				var rows [][]string
				for _, o := range d.Operations {
					rows = append(rows, []string{o.Name, fmt.Sprint(o.Kind), o.Help})
				}
				fitTable(s.out, width, "  ", []string{"OPERATION", "KIND", "HELP"}, rows)
				rows = nil
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
					rows = append(rows, []string{"drivers." + d.Name + "." + o.Name, o.Type, o.Default, live, help})
				}
				fitTable(s.out, width, "  ", []string{"OPTION", "TYPE", "DEFAULT", "LIVE", "HELP"}, rows)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "print each row on one line with its help whole (default: fit 100 columns)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newConfigCmd(s *streams) *cobra.Command {
	var src configSources
	var asJSON, backfill, wide bool
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
			width := consoleWidth
			if wide {
				width = 0
			}
			rows := make([][]string, 0, len(snap.Entries))
			for _, e := range snap.Entries {
				rows = append(rows, []string{e.Key, e.Value, e.Source})
			}
			wrapColumns(s.out, width, []string{"KEY", "VALUE", "SOURCE"}, rows)
			for _, t := range thresholds {
				fmt.Fprintln(s.out, wrapText("threshold: ", t, width))
			}
			for _, n := range snap.Notices {
				fmt.Fprintln(s.out, wrapText("note: ", n, width))
			}
			return nil
		},
	}
	src.bind(cmd)
	cmd.Flags().BoolVar(&backfill, "backfill", false, "as run's --backfill (same as --set workload.backfill=true)")
	cmd.Flags().DurationVar(&warmup, "warmup", 0, "as run's --warmup (same as --set workload.warmup=D)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&wide, "wide", false, "print each key on one line, its value and source whole (default: fit 100 columns)")
	return cmd
}

// wrapColumns prints rows under header in aligned columns two spaces apart, within width
// columns: when the columns' widest cells do not fit, the columns after the first (a
// config key stays whole) are narrowed, widest first, and a cell wider than its column
// continues on the lines below its row, in its own column. Width 0 prints every row on
// one line.
func wrapColumns(out io.Writer, width int, header []string, rows [][]string) {
	all := append([][]string{header}, rows...)
	widths := make([]int, len(header))
	for _, r := range all {
		for i := range widths {
			widths[i] = max(widths[i], runeLen(r[i]))
		}
	}
	const gap, narrowest = 2, 12
	if width > 0 && len(widths) > 1 {
		total := gap * (len(widths) - 1)
		for _, w := range widths {
			total += w
		}
		// A column at a time, the widest: the columns even out rather than one going
		// down to its narrowest beside a wide one.
		for ; total > width; total-- {
			widest := 1
			for i := 2; i < len(widths); i++ {
				if widths[i] > widths[widest] {
					widest = i
				}
			}
			if widths[widest] <= narrowest {
				break
			}
			widths[widest]--
		}
	}
	for _, r := range all {
		cells := make([][]string, len(r))
		lines := 1
		for i, c := range r {
			if width > 0 && i > 0 {
				cells[i] = cutCell(c, widths[i])
			} else {
				cells[i] = []string{c}
			}
			lines = max(lines, len(cells[i]))
		}
		for l := range lines {
			var b strings.Builder
			for i, c := range cells {
				part := ""
				if l < len(c) {
					part = c[l]
				}
				b.WriteString(part)
				if i < len(cells)-1 {
					b.WriteString(strings.Repeat(" ", max(widths[i]-runeLen(part), 0)+gap))
				}
			}
			fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
		}
	}
}

// cutCell splits s into pieces of at most w runes, each ending where a path, a list or a
// sentence may break (after a space or one of / , ; & = - . _ :), or at w when no such place
// is in reach.
func cutCell(s string, w int) []string {
	var parts []string
	r := []rune(s)
	for len(r) > w {
		at := w
		for i := w; i > w/2; i-- {
			if strings.ContainsRune(" /,;&=-._:", r[i-1]) {
				at = i
				break
			}
		}
		parts = append(parts, strings.TrimRight(string(r[:at]), " "))
		r = r[at:]
		for len(r) > 0 && r[0] == ' ' {
			r = r[1:]
		}
	}
	return append(parts, string(r))
}

// fitTable prints rows under header in aligned columns after indent, the last column (a
// help text) wrapped to keep each line within width columns: beside the others while
// at least minLastColumn columns are left for it, else on lines of its own under its row.
// Width 0 prints every row on one line.
func fitTable(out io.Writer, width int, indent string, header []string, rows [][]string) {
	last := len(header) - 1
	if width > 0 {
		// A cell after the first too long for its column (a DSN as a default) would widen it for
		// every row: it goes first into the row's last column instead, named by its header.
		rows = slices.Clone(rows)
		for j, r := range rows {
			r = slices.Clone(r)
			for i := last - 1; i >= 1; i-- {
				if runeLen(r[i]) > maxCell {
					r[last] = strings.TrimSpace(strings.ToLower(header[i]) + " " + r[i] + "; " + r[last])
					r[i] = "(see " + strings.ToLower(header[last]) + ")"
				}
			}
			rows[j] = r
		}
	}
	widths := make([]int, last)
	for _, r := range append([][]string{header}, rows...) {
		for i := range widths {
			widths[i] = max(widths[i], runeLen(r[i]))
		}
	}
	start := runeLen(indent)
	for _, w := range widths {
		start += w + 2
	}
	for _, r := range append([][]string{header}, rows...) {
		var b strings.Builder
		b.WriteString(indent)
		for i, w := range widths {
			b.WriteString(r[i] + strings.Repeat(" ", w-runeLen(r[i])+2))
		}
		cells := b.String()
		switch {
		case width <= 0 || r[last] == "":
			fmt.Fprintln(out, strings.TrimRight(cells+r[last], " "))
		case width-start >= minLastColumn && longestWord(r[last]) <= width-start:
			fmt.Fprintln(out, wrapText(cells, r[last], width))
		default:
			fmt.Fprintln(out, strings.TrimRight(cells, " "))
			fmt.Fprintln(out, wrapText(indent+"    ", r[last], width))
		}
	}
}

func longestWord(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n = max(n, runeLen(w))
	}
	return n
}

// maxCell is the widest a cell before the last column gets at a width.
const maxCell = 24

// minLastColumn is the narrowest a wrapped help column gets beside the others.
const minLastColumn = 30
