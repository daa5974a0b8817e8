package cluster_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/cluster"
)

// TestInProcessFleetResplitsInsertsOnce: a fleet whose nodes insert at different paces
// (a node scope gives one of three twice the rate of the other two together) loses a node
// mid-run, and the new keys are re-split between the two left. Every key is inserted by
// one node only, across the change: the nodes' stores hold as many distinct new keys as
// the nodes claimed. Before the coordinator gave the new split one base beyond every key
// claimed, each node started its new share from its own count, and the fast node's keys
// ran into the slow one's. The fleet's status carries the keyspace: numKeys plus every
// node's inserts, which the member list shows per node.
//
// The fleet runs on a simulated clock moved on only once every node still there has been
// beaten (pumpedFleet): on real time a loaded machine's late beats could find an
// answering node lost and re-split for it too.
func TestInProcessFleetResplitsInsertsOnce(t *testing.T) {
	const numKeys = 100
	f := newPumpedFleet(t, 3, nil)
	nodes, coord, url := f.nodes, f.coord, f.url
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = strings.TrimPrefix(n.ts.URL, "http://")
	}
	sorted := slices.Sorted(slices.Values(addrs))
	fast := slices.Index(addrs, sorted[0]) // member 0 of 3, then of 2
	lost := slices.Index(addrs, sorted[2])
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.numKeys": numKeys, "workload.readEnabled": false, "workload.writeMix": "insert",
		"workload.writeRate": 150, "workload.validate": true}}, nil)
	ctx := context.Background()
	if _, err := coord.SetConfig(ctx, cluster.Scope{Kind: cluster.ScopeNode, Node: sorted[0]}, map[string]string{"workload.writeRate": "200"}); err != nil {
		t.Fatal(err)
	}
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	inCall(t, http.MethodPost, url("/api/v1/load/start"), nil, nil)
	f.waitSim(t, time.Second)
	f.drop(lost)
	nodes[lost].ts.CloseClientConnections()
	nodes[lost].ts.Close()
	// The coordinator finds the node lost after LostAfter (1 s) and re-splits. The
	// patiences below are real time; they only turn what never happens into a failure.
	deadline := time.Now().Add(time.Minute)
	for {
		v, _, _ := nodes[fast].inst.Config().Value("workload.insertMembers")
		if v == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fast node still inserts one share of %s a minute after a node was lost", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	base, _, _ := nodes[fast].inst.Config().Value("workload.insertBase")
	f.waitSim(t, time.Second)
	inCall(t, http.MethodPost, url("/api/v1/load/stop"), nil, nil)
	// The lost node stops by itself when its lease (2 s) lapses.
	for _, n := range nodes {
		for end, last := time.Now().Add(time.Minute), int64(-1); ; {
			st := n.inst.Status()
			if st.Idle() && st.Inserted == last {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("a node still inserts a minute after the stop: %+v", st)
			}
			last = st.Inserted
			time.Sleep(100 * time.Millisecond)
		}
	}
	var claimed, top int64
	for _, n := range nodes {
		st := n.inst.Status()
		claimed += st.Inserted
		top = max(top, st.KeyspaceSize)
	}
	owner := map[int64]int{}
	for idx := int64(numKeys); idx < top+400; idx++ {
		for i, n := range nodes {
			if _, err := n.inst.Read(ctx, "T"+strconv.FormatInt(idx, 10)); err == nil {
				if o, dup := owner[idx]; dup {
					t.Errorf("key index %d inserted by node %s and node %s", idx, addrs[o], addrs[i])
				}
				owner[idx] = i
			}
		}
	}
	t.Logf("%d inserts claimed, %d distinct keys in the stores, re-split at base %s", claimed, len(owner), base)
	if int64(len(owner)) != claimed || claimed == 0 {
		t.Errorf("%d distinct keys inserted, %d inserts claimed by the nodes; want as many keys as inserts, some", len(owner), claimed)
	}
	// The fleet's status: numKeys plus the live nodes' inserts and the lost node's last
	// count, once the beats after the stop are in.
	live := nodes[fast].inst.Status().Inserted
	for i, n := range nodes {
		if i != fast && i != lost {
			live += n.inst.Status().Inserted
		}
	}
	var st struct {
		KeyspaceSize int64 `json:"keyspaceSize"`
		Inserted     int64 `json:"inserted"`
	}
	for end := time.Now().Add(time.Minute); ; {
		inCall(t, http.MethodGet, url("/api/v1/status"), nil, &st)
		// Each member's line in the member list has its own count.
		var members int64
		for _, m := range coord.Members() {
			members += m.Inserted
		}
		if st.Inserted >= live && st.KeyspaceSize == numKeys+st.Inserted && members == st.Inserted {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("fleet status keyspaceSize %d, inserted %d, the members' %d; want numKeys %d + inserted, at least the live nodes' %d, the members' sum",
				st.KeyspaceSize, st.Inserted, members, numKeys, live)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
