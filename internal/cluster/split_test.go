package cluster

import (
	"strconv"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/workload"
)

func TestParseScope(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Scope
		bad  bool
	}{
		{in: "", want: Scope{Kind: ScopeFleet}},
		{in: "fleet", want: Scope{Kind: ScopeFleet}},
		{in: "group:zone=us-east-1a", want: Scope{Kind: ScopeGroup, Label: "zone", Value: "us-east-1a"}},
		{in: "node:10.0.0.5:8080", want: Scope{Kind: ScopeNode, Node: "10.0.0.5:8080"}},
		{in: "group:zone", bad: true},
		{in: "group:=a", bad: true},
		{in: "node:", bad: true},
		{in: "fleet:x", bad: true},
		{in: "rack:r1", bad: true},
	} {
		got, err := ParseScope(tc.in)
		if tc.bad {
			fes, ok := driver.AsFieldErrors(err)
			if !ok || fes[0].Field != "scope" || fes[0].Allowed == "" {
				t.Errorf("ParseScope(%q) = %v, %v; want a field error naming scope and the allowed forms", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if again, err := ParseScope(got.String()); err != nil || again != got {
			t.Errorf("ParseScope(%q.String()) = %+v, %v", tc.in, again, err)
		}
	}
}

// A fleet rate is divided by weight among the scope's members; a group's among the
// group's; a node's own rate is not divided; precedence is fleet < group < node.
func TestEffectiveSplitsRatesByScope(t *testing.T) {
	a := splitMember{id: "a", labels: map[string]string{"zone": "z1"}}
	b := splitMember{id: "b", labels: map[string]string{"zone": "z1"}, weight: 3}
	c := splitMember{id: "c", labels: map[string]string{"zone": "z2"}}
	all := []splitMember{a, b, c}
	sc := scopes{
		{Kind: ScopeFleet}: {"workload.readRate": "10000", "workload.writeRate": "500", "workload.readers": "8"},
		{Kind: ScopeGroup, Label: "zone", Value: "z1"}: {"workload.writeRate": "400"},
		{Kind: ScopeNode, Node: "c"}:                   {"workload.readers": "2", "workload.ops.scan.rate": "77"},
	}
	want := map[string]map[string]string{
		"a": {"workload.readRate": "2000", "workload.writeRate": "100", "workload.readers": "8"},
		"b": {"workload.readRate": "6000", "workload.writeRate": "300", "workload.readers": "8"},
		"c": {"workload.readRate": "2000", "workload.writeRate": "100", "workload.readers": "2", "workload.ops.scan.rate": "77"},
	}
	sum := 0.0
	for _, m := range all {
		got, err := sc.effective(m, all)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want[m.id] {
			if got[k] != v {
				t.Errorf("node %s %s = %q, want %q", m.id, k, got[k], v)
			}
		}
		if len(got) != len(want[m.id]) {
			t.Errorf("node %s: %v, want %v", m.id, got, want[m.id])
		}
		r, _ := strconv.ParseFloat(got["workload.readRate"], 64)
		sum += r
	}
	if sum != 10000 {
		t.Errorf("fleet read rate splits to %v in total, want 10000", sum)
	}
	if _, err := (scopes{{Kind: ScopeFleet}: {"workload.readRate": "fast"}}).effective(a, all); err == nil {
		t.Error("a rate that is not a number was split")
	}
}

func TestKeyRangesCoverTheKeyspaceOnce(t *testing.T) {
	for _, tc := range []struct {
		keys    int64
		weights []float64
	}{{1000, []float64{1, 1, 1}}, {7, []float64{1, 1, 1, 1, 1}}, {100000, []float64{1, 2, 0.5}}, {3, []float64{1}}} {
		ms := make([]splitMember, len(tc.weights))
		for i, w := range tc.weights {
			ms[i] = splitMember{id: strconv.Itoa(i), weight: w}
		}
		rs := keyRanges(tc.keys, ms)
		var next int64
		for i, r := range rs {
			if r.Start != next || r.End < r.Start {
				t.Fatalf("%d keys, weights %v: range %d = %v after %d", tc.keys, tc.weights, i, r, next)
			}
			next = r.End
		}
		if next != tc.keys {
			t.Fatalf("%d keys, weights %v: ranges end at %d", tc.keys, tc.weights, next)
		}
		if tc.keys == 100000 {
			if want := (workload.Range{Start: 28571, End: 85714}); rs[1] != want {
				t.Errorf("weight 2 of 3.5 got %v, want %v", rs[1], want)
			}
		}
	}
}

func TestCanonicalRefusesTwoSpellingsOfOneKey(t *testing.T) {
	got, err := canonical(map[string]string{"workload.readRate": "5"})
	if err != nil || got["workload.readRate"] != "5" {
		t.Fatalf("canonical = %v, %v", got, err)
	}
	if _, err := canonical(map[string]string{"workload.readRate": "5", "workload.readRateLimit": "6"}); err == nil {
		t.Error("two spellings of workload.readRate accepted")
	}
}
