package cluster_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// A node's intervals from before a coordinator first pulled it are its own history, not
// the fleet's: of a node that runs load alone while a coordinator forms a fleet over it,
// the fleet counts exactly the reads of the intervals after its first pull's page, none
// of those the page held (fleetstats.go, apply: the first page only marks where the
// node's pulls start).
func TestFleetLeavesANodesEarlierHistoryOut(t *testing.T) {
	n := newInNodeOn(t, nil, nil)
	inCall(t, http.MethodPatch, n.ts.URL+"/api/v1/config", map[string]any{"values": map[string]any{
		"workload.readRate": 300, "workload.writeEnabled": false, "workload.numKeys": 100}}, nil)
	inCall(t, http.MethodPost, n.ts.URL+"/api/v1/driver/init", map[string]any{"driver": "memory"}, nil)
	// A reader (a dashboard, an earlier coordinator) started the node's interval log.
	var page stats.IntervalsPage
	inCall(t, http.MethodGet, n.ts.URL+"/api/v1/stats/intervals", nil, &page)
	inCall(t, http.MethodPost, n.ts.URL+"/api/v1/load/start", map[string]any{"ops": []string{"read"}}, nil)
	time.Sleep(2500 * time.Millisecond)

	// The coordinator's first pull of the node: the page it got.
	var (
		mu    sync.Mutex
		first *stats.IntervalsPage
	)
	inner := *n.handler.Load()
	var noting http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/stats/intervals") {
			inner.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		mu.Lock()
		if first == nil && rec.Code == http.StatusOK {
			first = new(stats.IntervalsPage)
			if err := json.Unmarshal(rec.Body.Bytes(), first); err != nil {
				t.Errorf("the first page: %v", err)
			}
		}
		mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	n.handler.Store(&noting)

	addr := strings.TrimPrefix(n.ts.URL, "http://")
	disc, err := discovery.Parse("static:"+addr, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	coord, err := cluster.New(cluster.Options{Self: discovery.Member{ID: addr, Addr: addr}, Discovery: disc, Token: inToken,
		Config: snap, BeatEvery: 200 * time.Millisecond, SuspectAfter: 600 * time.Millisecond, LostAfter: time.Second,
		Lease: 2 * time.Second, StartDelay: 200 * time.Millisecond, MergeWait: 500 * time.Millisecond, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go coord.Run(ctx)
	if err := coord.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		got := first != nil
		mu.Unlock()
		if got {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the coordinator did not pull the node's intervals in 10 s")
		}
	}
	time.Sleep(2 * time.Second) // seconds of the node's load after the first pull
	inCall(t, http.MethodPost, n.ts.URL+"/api/v1/load/stop", nil, nil)
	time.Sleep(1500 * time.Millisecond) // the last reads' interval is in the log

	var held stats.IntervalsPage
	inCall(t, http.MethodGet, n.ts.URL+"/api/v1/stats/intervals", nil, &held)
	mu.Lock()
	from := first.Next
	var history int64
	for _, iv := range first.Intervals {
		history += iv.Ops["read"].Successes + iv.Ops["read"].Misses
	}
	mu.Unlock()
	var after int64
	for _, iv := range held.Intervals {
		if iv.Seq >= from {
			after += iv.Ops["read"].Successes + iv.Ops["read"].Misses
		}
	}
	if history == 0 || after == 0 || held.Missed > 0 {
		t.Fatalf("the first page held %d reads, the node ran %d after it (%d intervals missed); want some of both, none missed", history, after, held.Missed)
	}
	// The fleet's cumulative view takes every interval of the node it pulled, late ones too.
	fleet := coord.Fleet().Collector()
	var got int64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if got = fleet.Cumulative().Ops["read"].Count; got == after {
			break
		}
	}
	if got != after {
		t.Errorf("the fleet counts %d reads; the node ran %d after the fleet's first pull and %d before (that page's); want %d",
			got, after, history, after)
	}
}
