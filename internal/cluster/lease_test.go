package cluster_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/cluster"
)

// A node cut off from its coordinator (here its API answers 503, its process and agent
// live on) is found lost after LostAfter, but its share moves to the others only once its
// lease has lapsed: until then it may still run it, and the fleet would run over its
// target. It stops its own load at its lease's end; when the link heals it rejoins and
// takes its share again.
func TestInProcessLostNodeKeepsItsShareUntilItsLeaseLapses(t *testing.T) {
	const lease = 2 * time.Second
	nodes, coord, url := inFleet(t, 3) // beats every 200 ms, lost after 1 s, lease 2 s
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 600, "workload.writeEnabled": false, "workload.numKeys": 500}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	inCall(t, http.MethodPost, url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
	time.Sleep(time.Second)

	cutOff := nodes[2]
	live := cutOff.handler.Load()
	var dead http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "cut off", http.StatusServiceUnavailable)
	})
	cutOff.handler.Store(&dead)
	cut := time.Now()
	var moved, stopped, lost time.Duration
	for moved == 0 || stopped == 0 || lost == 0 {
		for _, m := range coord.Members() {
			if m.Health == cluster.Lost && lost == 0 {
				lost = time.Since(cut)
			}
		}
		if got, _, _ := nodes[0].inst.Config().Value("workload.readRate"); got == "300" && moved == 0 {
			moved = time.Since(cut)
		}
		if !cutOff.inst.Status().Running["read"] && stopped == 0 {
			stopped = time.Since(cut)
		}
		if time.Since(cut) > lease+10*time.Second {
			t.Fatalf("%v after the cut: share moved after %v, cut-off node stopped after %v", time.Since(cut), moved, stopped)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("cut-off node found lost after %v, stopped its load after %v, its share moved after %v (lease %v)", lost, stopped, moved, lease)
	// The last beat that renewed the node's lease answered at most one beat period (200 ms)
	// before the cut: its lease ends no earlier than lease-200ms after the cut, and the
	// share must not move before.
	if moved < lease-200*time.Millisecond {
		t.Errorf("the cut-off node's share moved %v after the cut, before its lease (%v) could have lapsed", moved, lease)
	}

	cutOff.handler.Store(live)
	healed := time.Now()
	for {
		got, _, _ := nodes[0].inst.Config().Value("workload.readRate")
		if got == "200" && cutOff.inst.Status().Running["read"] {
			t.Logf("healed node runs its share again after %v", time.Since(healed))
			break
		}
		if time.Since(healed) > 10*time.Second {
			t.Fatalf("10 s after the heal: node 0 readRate %s, healed node running %v", got, cutOff.inst.Status().Running["read"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	inCall(t, http.MethodPost, url("/api/v1/load/stop"), nil, nil)
}
