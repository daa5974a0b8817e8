package cluster_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// TestInProcessFleetSplitsInserts: the nodes of a fleet insert disjoint new keys. Each
// node of n (its index i in the sorted member list) inserts numKeys+i, +n, ..., so the
// fleet's keyspace grows by the fleet's inserts exactly: every key a node claimed is in
// its store, no key is in two nodes' stores, and the keys are the claimed ones and no
// others. Before the split every node inserted numKeys, numKeys+1, ... itself. The fleet
// runs on a simulated clock moved on only once every node has been beaten (pumpedFleet),
// so no node is judged lost (and its keys re-split) on a loaded machine.
func TestInProcessFleetSplitsInserts(t *testing.T) {
	for _, size := range []int{2, 3} {
		t.Run(strconv.Itoa(size)+" nodes", func(t *testing.T) {
			const numKeys = 100
			f := newPumpedFleet(t, size, nil)
			nodes, url := f.nodes, f.url
			inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
				"workload.numKeys": numKeys, "workload.readEnabled": false, "workload.writeMix": "insert",
				"workload.writeRate": 300, "workload.validate": true}}, nil)
			inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
			inCall(t, http.MethodPost, url("/api/v1/load/start"), nil, nil)
			f.waitSim(t, time.Second)
			inCall(t, http.MethodPost, url("/api/v1/load/stop"), nil, nil)
			// The nodes' workers end after the stop's answer: wait until no node claims a key.
			for _, n := range nodes {
				for end, last := time.Now().Add(time.Minute), int64(-1); ; {
					st := n.inst.Status()
					if st.Idle() && st.KeyspaceSize == last {
						break
					}
					if time.Now().After(end) {
						t.Fatalf("a node still claims keys a minute after the stop: %+v", st)
					}
					last = st.KeyspaceSize
					time.Sleep(100 * time.Millisecond)
				}
			}

			// A node's index is its place in the sorted member list.
			addrs := make([]string, size)
			for i, n := range nodes {
				addrs[i] = strings.TrimPrefix(n.ts.URL, "http://")
			}
			sorted := slices.Sorted(slices.Values(addrs))
			ctx := context.Background()
			owner := map[int64]int{} // key index -> node that has it
			var claimed int64
			// One patience for every insert still on its way, not one per key: a node
			// missing keys it claimed fails after a minute, not a minute per key.
			settle := time.Now().Add(time.Minute)
			for i, n := range nodes {
				want := slices.Index(sorted, addrs[i])
				for k, v := range map[string]string{"workload.insertMember": strconv.Itoa(want), "workload.insertMembers": strconv.Itoa(size)} {
					if got, _, _ := n.inst.Config().Value(k); got != v {
						t.Errorf("node %s: %s=%s, want %s", addrs[i], k, got, v)
					}
				}
				grown := n.inst.Status().KeyspaceSize - numKeys
				if grown <= 0 || grown%int64(size) != 0 {
					t.Fatalf("node %s: keyspace grew by %d; want a positive multiple of %d (its inserts × the fleet's size)", addrs[i], grown, size)
				}
				mine := grown / int64(size)
				claimed += mine
				// Its keys: numKeys+index+k×size for k below its inserts, and beyond them none.
				for k := range mine + 2 {
					idx := numKeys + int64(want) + k*int64(size)
					_, err := n.inst.Read(ctx, "T"+strconv.FormatInt(idx, 10))
					// An insert claimed as the load stopped may still be on its way.
					for k < mine && err != nil && time.Now().Before(settle) {
						time.Sleep(10 * time.Millisecond)
						_, err = n.inst.Read(ctx, "T"+strconv.FormatInt(idx, 10))
					}
					switch {
					case err == nil && k < mine:
					case errors.Is(err, driver.ErrNotFound) && k >= mine:
					default:
						t.Errorf("node %s, its insert %d (key index %d): %v", addrs[i], k, idx, err)
					}
				}
				// The other nodes' keys are not in its store.
				for idx := int64(numKeys); idx < numKeys+grown; idx++ {
					if _, err := n.inst.Read(ctx, "T"+strconv.FormatInt(idx, 10)); err == nil {
						if o, dup := owner[idx]; dup {
							t.Errorf("key index %d inserted by node %s and node %s", idx, addrs[o], addrs[i])
						}
						owner[idx] = i
					}
				}
			}
			if int64(len(owner)) != claimed || claimed == 0 {
				t.Errorf("%d distinct keys inserted, %d inserts claimed by the nodes; want as many keys as inserts, some", len(owner), claimed)
			}
		})
	}
}
