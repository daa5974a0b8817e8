package source

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"
)

func TestFleetScopesRoundTrip(t *testing.T) {
	endpoint, client := startEtcd(t)
	f, err := OpenFleetScopes([]string{endpoint}, "/t/fleet", EtcdAccess{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	want := map[string]map[string]string{
		"fleet":             {"workload.readRate": "4000", "workload.numKeys": "10"},
		"group:zone=a":      {"workload.writeRate": "300"},
		"node:10.0.0.5:808": {"workload.readers": "7"},
	}
	for scope, vals := range want {
		if err := f.Save(ctx, scope, vals); err != nil {
			t.Fatal(err)
		}
	}
	got, rev, err := f.Load(ctx)
	if err != nil || rev == 0 {
		t.Fatal(rev, err)
	}
	if !maps.EqualFunc(got, want, maps.Equal[map[string]string]) {
		t.Errorf("Load = %v, want %v", got, want)
	}
	// An edit made with etcdctl reaches the watcher whole.
	seen := make(chan map[string]map[string]string, 4)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go f.Watch(wctx, rev, func(all map[string]map[string]string) { seen <- all }, func(err error) { t.Log(err) })
	if _, err := client.Put(ctx, "/t/fleet/fleet/workload.readRate", "9000"); err != nil {
		t.Fatal(err)
	}
	select {
	case all := <-seen:
		if all["fleet"]["workload.readRate"] != "9000" || all["group:zone=a"]["workload.writeRate"] != "300" {
			t.Errorf("watch gave %v", all)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change seen by the watch")
	}
	// A key that is not SCOPE/KEY is an error naming it, not a value silently dropped.
	if _, err := client.Put(ctx, "/t/fleet/stray", "1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Load(ctx); err == nil || !strings.Contains(err.Error(), "/t/fleet/stray") {
		t.Errorf("Load with a stray key: %v", err)
	}
	if err := f.Save(ctx, "node:a/b", map[string]string{"k": "v"}); err == nil {
		t.Error("a scope with a slash was saved")
	}
}
