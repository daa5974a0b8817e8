package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
)

// TestPipelinedPairShape: the three tools of redis-pipelined run the same shape, 4
// connections with 16 commands in flight on each, on the redis pair's keys, values and
// mix; the closed-loop redis pair keeps its 50 connections one command at a time.
func TestPipelinedPairShape(t *testing.T) {
	srv := &testserver.Server{Host: "127.0.0.1", Port: 1}
	// lastSet is the value a --set KEY= takes: the last one wins in ndbench.
	lastSet := func(args []string, key string) string {
		v := ""
		for i, a := range args {
			if a == "--set" && i+1 < len(args) && strings.HasPrefix(args[i+1], key+"=") {
				v = strings.TrimPrefix(args[i+1], key+"=")
			}
		}
		return v
	}
	flag := func(args []string, name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	tests := []struct {
		pair                              string
		readers, pipeline, readRate, mix  string
		keys, size                        string
		rbConns, rbPipeline, mtConns, mtP string
		shape                             redisShape
	}{
		{"redis-pipelined", "4", "16", "0", "read:8,write:2", "100000", "100", "4", "16", "4", "--pipeline=16", pipelinedShape},
		{"redis", "50", "", "0", "read:8,write:2", "100000", "100", "50", "", "50", "", redisShape{conns: connections, pipeline: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.pair, func(t *testing.T) {
			nd := ndbenchArgs(tt.pair, srv, 8*time.Second, 5000)
			for key, want := range map[string]string{"workload.readers": tt.readers, "workload.pipeline": tt.pipeline,
				"workload.readRate": tt.readRate, "workload.readMix": tt.mix, "workload.numKeys": tt.keys,
				"workload.dataSize": tt.size, "drivers.redis.addrs": "127.0.0.1:1", "workload.writers": "0"} {
				if got := lastSet(nd, key); got != want {
					t.Errorf("ndbench --set %s=%q, want %q (%q)", key, got, want, nd)
				}
			}
			if flag(nd, "--driver") != "redis" {
				t.Errorf("ndbench's driver: %q", nd)
			}
			for _, test := range []string{"get", "set"} {
				rb := redisBenchmarkArgs(srv, tt.shape, test, 1000)
				if flag(rb, "-c") != tt.rbConns || flag(rb, "-P") != tt.rbPipeline || flag(rb, "-t") != test ||
					flag(rb, "-d") != tt.size || flag(rb, "-r") != tt.keys || flag(rb, "-n") != "1000" {
					t.Errorf("redis-benchmark %s: %q; want -c %s -P %q -d %s -r %s", test, rb, tt.rbConns, tt.rbPipeline, tt.size, tt.keys)
				}
			}
			mt := memtierArgs(srv, "redis", tt.shape, 8*time.Second, 0, "/tmp/m.json")
			joined := strings.Join(mt, " ")
			for _, want := range []string{"-c " + tt.mtConns, "-t 1", "--ratio=1:4", "--key-pattern=R:R", "--test-time=8",
				"-d " + tt.size, "--key-maximum=" + tt.keys, "--protocol=redis"} {
				if !strings.Contains(joined, want) {
					t.Errorf("memtier %q lacks %s", joined, want)
				}
			}
			if hasP := strings.Contains(joined, "--pipeline="); (tt.mtP != "") != hasP || (hasP && !strings.Contains(joined, tt.mtP)) {
				t.Errorf("memtier %q: want pipeline %q", joined, tt.mtP)
			}
			if strings.Contains(joined, "--rate-limiting") {
				t.Errorf("memtier %q: closed loop, no --rate-limiting", joined)
			}
		})
	}
}
