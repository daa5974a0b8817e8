package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestFor is what execute adds to a usage error so that a typo costs one glance: the
// near command or flag, and, when a Go-style single-dash flag was read as a shorthand
// with a value (`-driver redis` is `-d river` and a stray `redis`), that long flags take
// two dashes. It is empty when nothing is near.
func suggestFor(root *cobra.Command, args []string, err error) string {
	cmd, _, ferr := root.Find(args)
	if ferr != nil || cmd == nil {
		cmd = root
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' || (a[1] >= '0' && a[1] <= '9') {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if f := lookupFlag(cmd, name); f != nil {
			return fmt.Sprintf("long flags take two dashes: --%s (%s was read as -%s)", f.Name, a, shorthandReading(cmd, a[1:]))
		}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if near := nearest(name, flagNames(cmd)); near != "" {
			return fmt.Sprintf("did you mean --%s?", near)
		}
	}
	return ""
}

// shorthandReading says how pflag read a single-dash word: its first letter a shorthand,
// the rest its value (or more shorthands when the first takes none).
func shorthandReading(cmd *cobra.Command, word string) string {
	f := cmd.Flags().ShorthandLookup(word[:1])
	if f == nil {
		return word[:1] + " ..."
	}
	if f.NoOptDefVal != "" {
		return word[:1] + " -" + word[1:]
	}
	return word[:1] + " " + word[1:]
}

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

func flagNames(cmd *cobra.Command) []string {
	var names []string
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	return names
}

// commandNames are the visible subcommands of cmd, with their aliases.
func commandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
			names = append(names, c.Aliases...)
		}
	}
	return names
}

// nearest is the candidate closest to typed by edit distance (a swap of two neighbours
// counts once: `rnu` is one from `run`), within a third of its length (at least 1, at
// most 3), or one that typed is a prefix of; "" when none is that near. Ties go to the
// first in sorted order, so the answer is stable.
func nearest(typed string, candidates []string) string {
	typed = strings.ToLower(typed)
	limit := min(max(len(typed)/3, 1), 3)
	best, bestD := "", limit+1
	for _, c := range slices.Sorted(slices.Values(candidates)) {
		d := editDistance(typed, strings.ToLower(c))
		if strings.HasPrefix(strings.ToLower(c), typed) && len(typed) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions, deletions,
// substitutions and transpositions of adjacent letters each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
