package node

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	_ "github.com/ndbench/ndbench/drivers/composite"
	"github.com/ndbench/ndbench/internal/config"
)

// compositeSets configures a derived composition of two memory stores, its children
// under their own keys.
var compositeSets = []string{
	"drivers.composite.mode=derived", "drivers.composite.primary=memory",
	"drivers.composite.derived=memory@replica", "drivers.composite.lagSample=1",
	"drivers.composite.lagTimeout=20ms", "drivers.memory@replica.shards=4",
}

// TestCompositeChildrenAndSeries: a composition's children take the options configured
// under drivers.<reference>.*, their changes are pending until the next Init, and the
// series the driver measures (per child, visibility) are recorded like op classes.
func TestCompositeChildrenAndSeries(t *testing.T) {
	i := newInstance(t, compositeSets...)
	if err := i.Init(context.Background(), "composite", nil); err != nil {
		t.Fatal(err)
	}
	st := i.Status()
	if st.ConnectionInfo["derived"] != "memory@replica" || st.ConnectionInfo["derived.shards"] != "4" {
		t.Fatalf("connection info %v: the replica child did not get its own options", st.ConnectionInfo)
	}
	// Two writes: the two stores are not connected, so both samples time out.
	for _, k := range []string{"a", "b"} {
		if err := i.Write(context.Background(), k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	c := i.Collector()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.Tick(time.Now())
		cum := c.Cumulative()
		if cum.Ops["visibility"].Errors == 2 && cum.Ops["child.primary"].Count == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series after two writes: %+v", cum.Ops)
		}
		time.Sleep(10 * time.Millisecond)
	}

	res, err := i.Patch(map[string]string{"drivers.memory@replica.shards": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Pending, "drivers.memory@replica.shards") {
		t.Fatalf("a child's option change is not pending: %v", res.Pending)
	}
	if _, err := i.Patch(map[string]string{"drivers.memory@replica.shards": "4"}); err != nil {
		t.Fatal(err)
	}
	if p := i.Status().Pending; len(p) != 0 {
		t.Fatalf("pending after setting it back: %v", p)
	}
}

// TestCompositeChildErrorsNameTheChildKey: a bad option of a child is refused with the
// child's own key, before anything connects, and nothing is applied.
func TestCompositeChildErrorsNameTheChildKey(t *testing.T) {
	_, err := config.Load(config.Sources{Sets: append([]string{"driver.name=composite", "drivers.memory@replica.shards=0"}, compositeSets[:4]...)})
	fes, ok := driver.AsFieldErrors(err)
	if !ok || len(fes) != 1 || fes[0].Field != "drivers.memory@replica.shards" || fes[0].Source != "--set" {
		t.Fatalf("got %v, want one error on drivers.memory@replica.shards from --set", err)
	}
	// A bad reference names the option that holds it, with its source.
	for _, tc := range []struct{ set, want string }{
		{"drivers.composite.cache=nosuch", "registered driver"},
		{"drivers.composite.database=memory@B!", "instance after @"},
		{"drivers.composite.cache=composite", "cannot contain itself"},
	} {
		_, err = config.Load(config.Sources{Sets: []string{"driver.name=composite", "drivers.composite.cache=memory", "drivers.composite.database=memory@db", tc.set}})
		key, _, _ := strings.Cut(tc.set, "=")
		fes, ok := driver.AsFieldErrors(err)
		if !ok || len(fes) != 1 || fes[0].Field != key || fes[0].Source != "--set" || !strings.Contains(fes[0].Allowed, tc.want) {
			t.Errorf("%s: %v; want one error on %s from --set saying %q", tc.set, err, key, tc.want)
		}
	}
	// A reference in any case finds the options its keys were folded to.
	if _, err := config.Load(config.Sources{Sets: []string{"driver.name=composite", "drivers.composite.cache=memory", "drivers.composite.database=Memory@DB", "drivers.memory@DB.shards=0"}}); err == nil || !strings.Contains(err.Error(), "drivers.memory@db.shards") {
		t.Errorf("upper-case reference: %v", err)
	}
	_, err = config.Load(config.Sources{Sets: []string{"driver.name=memory", "drivers.memory@b!d.shards=4"}})
	if err == nil || !strings.Contains(err.Error(), "instance after @") {
		t.Fatalf("bad instance name: %v", err)
	}
	snap, err := config.Load(config.Sources{Sets: append([]string{"driver.name=composite"}, compositeSets...)})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snap.Notices {
		if strings.Contains(n, "memory@replica") {
			t.Fatalf("a child's options reported unused: %v", snap.Notices)
		}
	}
	if v, src, ok := snap.Value("drivers.memory.shards"); !ok || src != "default" || v != "64" {
		t.Fatalf("the primary child's defaults are not shown: %q %q %v", v, src, ok)
	}
}

// TestClassNamedLikeADriverSeries: an op class cannot take the name of a series the
// driver measures, which would merge the two.
func TestClassNamedLikeADriverSeries(t *testing.T) {
	for _, class := range []string{"visibility", "child"} {
		_, err := config.Load(config.Sources{Sets: append([]string{"driver.name=composite", "workload.ops." + class + ".mix=read"}, compositeSets...)})
		fes, ok := driver.AsFieldErrors(err)
		if !ok || len(fes) != 1 || fes[0].Field != "workload.ops."+class || !strings.Contains(fes[0].Allowed, "visibility") {
			t.Errorf("class %s: %v", class, err)
		}
	}
}

// TestCompositeChildrenWithInit: a driver init may carry the children's options as
// REF.OPTION; they land in the configuration under drivers.REF.OPTION, the children get
// them, and a bad one is refused with its key before anything connects.
func TestCompositeChildrenWithInit(t *testing.T) {
	i := newInstance(t)
	opts := map[string]string{"mode": "derived", "primary": "memory", "derived": "memory@replica",
		"memory@replica.shards": "8", "lagSample": "0"}
	bad := maps.Clone(opts)
	bad["memory@replica.shards"] = "0"
	err := i.Init(context.Background(), "composite", bad)
	if err == nil || !strings.Contains(err.Error(), "drivers.memory@replica.shards") {
		t.Fatalf("bad child option: %v", err)
	}
	if st := i.Status(); st.Initialized {
		t.Fatal("initialized after a refused child option")
	}
	if err := i.Init(context.Background(), "composite", opts); err != nil {
		t.Fatal(err)
	}
	if got := i.Status().ConnectionInfo["derived.shards"]; got != "8" {
		t.Fatalf("derived child's shards = %q, want 8", got)
	}
	if v, src, _ := i.Config().Value("drivers.memory@replica.shards"); v != "8" || src == "default" {
		t.Fatalf("drivers.memory@replica.shards = %q from %q", v, src)
	}
}
