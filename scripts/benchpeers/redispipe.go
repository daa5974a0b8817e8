package main

import (
	"strconv"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
)

// The pipelined Redis pair (issue 35's second Redis bar, ≥ 1.0× redis-benchmark -P 16):
// the redis pair's keys, values and 8:2 mix on 4 connections with 16 commands in flight
// on each. ndbench runs 4 readers on the direct driver with workload.pipeline=16, each
// worker's connection its own; redis-benchmark -c 4 -P 16 (a GET and a SET process,
// 4:1) and memtier -c 4 -t 1 --pipeline=16 --ratio=1:4.

// pipelinedShape is the pair's concurrency. redis-benchmark's perSec is about what -P 16
// does on 4 connections on this loaded 2-core machine (it runs a count, not a time).
var pipelinedShape = redisShape{conns: 4, pipeline: 16, perSec: 300000}

// pipelinedArgs is ndbench's command line for the pipelined pair: the redis pair's, with
// 4 readers each keeping 16 operations in flight (the later --set wins).
func pipelinedArgs(s *testserver.Server, d time.Duration) []string {
	return append(ndbenchArgs("redis", s, d, 0),
		"--set", "workload.readers="+strconv.Itoa(pipelinedShape.conns),
		"--set", "workload.pipeline="+strconv.Itoa(pipelinedShape.pipeline))
}
