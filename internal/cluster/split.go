package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/workload"
)

// Scope is where a fleet configuration value applies, lowest precedence first: the whole
// fleet, a group (the nodes with one label value: a zone, a rack), one node. It is
// Archaius's cascade (global < region < instance) for a fleet.
type Scope struct {
	// Kind is "fleet", "group" or "node".
	Kind string `json:"kind"`
	// Label and Value select a group's nodes (label zone, value us-east-1a).
	Label string `json:"label,omitempty"`
	Value string `json:"value,omitempty"`
	// Node is a node's id.
	Node string `json:"node,omitempty"`
}

// Scope kinds.
const (
	ScopeFleet = "fleet"
	ScopeGroup = "group"
	ScopeNode  = "node"
)

// ParseScope reads "fleet", "group:<label>=<value>" or "node:<id>".
func ParseScope(s string) (Scope, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	switch kind {
	case ScopeFleet, "":
		if rest != "" {
			break
		}
		return Scope{Kind: ScopeFleet}, nil
	case ScopeGroup:
		l, v, ok := strings.Cut(rest, "=")
		if !ok || l == "" || v == "" {
			break
		}
		return Scope{Kind: ScopeGroup, Label: l, Value: v}, nil
	case ScopeNode:
		if rest == "" {
			break
		}
		return Scope{Kind: ScopeNode, Node: rest}, nil
	}
	return Scope{}, &driver.FieldError{Field: "scope", Value: s, Allowed: "fleet, group:<label>=<value> (e.g. group:zone=us-east-1a), node:<id>"}
}

// String is the scope as ParseScope reads it.
func (s Scope) String() string {
	switch s.Kind {
	case ScopeGroup:
		return ScopeGroup + ":" + s.Label + "=" + s.Value
	case ScopeNode:
		return ScopeNode + ":" + s.Node
	}
	return ScopeFleet
}

// splitMember is what the split needs of a node.
type splitMember struct {
	id     string
	labels map[string]string
	weight float64
}

func (m splitMember) w() float64 {
	if m.weight <= 0 {
		return 1
	}
	return m.weight
}

func (m splitMember) in(s Scope) bool {
	switch s.Kind {
	case ScopeFleet:
		return true
	case ScopeGroup:
		return m.labels[s.Label] == s.Value
	case ScopeNode:
		return m.id == s.Node
	}
	return false
}

// scopes holds the fleet's configuration values per scope, keys canonical.
type scopes map[Scope]map[string]string

// rateKey tells whether a canonical key is a rate a fleet divides among its nodes: a rate
// at the fleet or a group scope is that scope's total; at a node's scope it is the node's
// own (NDBench's way, where every node is told its own rate).
func rateKey(k string) bool {
	switch k {
	case "workload.readRate", "workload.writeRate", "workload.backfillRate":
		return true
	}
	return strings.HasPrefix(k, "workload.ops.") && strings.HasSuffix(k, ".rate")
}

// effective returns node m's values: every scope that includes m, lowest first, with the
// rates of fleet and group scopes divided by weight among the members of that scope.
// members are the nodes sharing the load, m among them.
func (sc scopes) effective(m splitMember, members []splitMember) (map[string]string, error) {
	out := map[string]string{}
	order := slices.SortedFunc(maps.Keys(sc), func(a, b Scope) int {
		if d := scopeRank(a) - scopeRank(b); d != 0 {
			return d
		}
		return strings.Compare(a.String(), b.String())
	})
	for _, s := range order {
		if !m.in(s) {
			continue
		}
		total := 0.0
		for _, o := range members {
			if o.in(s) {
				total += o.w()
			}
		}
		for _, k := range slices.Sorted(maps.Keys(sc[s])) {
			v := sc[s][k]
			if s.Kind != ScopeNode && rateKey(k) {
				r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || r < 0 {
					return nil, &driver.FieldError{Field: k, Value: v, Allowed: "a rate in operations per second, 0 or more"}
				}
				if total > 0 {
					v = strconv.FormatFloat(r*m.w()/total, 'f', -1, 64)
				}
			}
			out[k] = v
		}
	}
	return out, nil
}

func scopeRank(s Scope) int {
	switch s.Kind {
	case ScopeFleet:
		return 0
	case ScopeGroup:
		return 1
	}
	return 2
}

// canonical maps values' keys onto their canonical form; two spellings of one key in one
// change are an error, not a coin toss.
func canonical(values map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(values))
	from := make(map[string]string, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		c := config.CanonicalKey(k)
		if prev, dup := from[c]; dup {
			return nil, &driver.FieldError{Field: k, Value: driver.Shown(false, ""), Allowed: fmt.Sprintf("one spelling per key: %s and %s are both %s", prev, k, c)}
		}
		from[c], out[c] = k, values[k]
	}
	return out, nil
}

// keyRanges splits [0, numKeys) among members in proportion to their weights, in member
// order: disjoint, contiguous, covering every key once.
func keyRanges(numKeys int64, members []splitMember) []workload.Range {
	total := 0.0
	for _, m := range members {
		total += m.w()
	}
	out := make([]workload.Range, len(members))
	var start int64
	acc := 0.0
	for i, m := range members {
		acc += m.w()
		end := int64(float64(numKeys) * acc / total)
		if i == len(members)-1 {
			end = numKeys
		}
		out[i] = workload.Range{Start: start, End: end}
		start = end
	}
	return out
}
