package api

import (
	"github.com/ndbench/ndbench/internal/ndbenchapi"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// Node is what the API drives: one ndbench node, *node.Node in a process. The
// server depends on this rather than on the instance itself, so that a fleet view (a
// coordinator fanning out to peers and merging their intervals) or a test double can
// serve the same routes. It is everything NDBench's routes use, and what the API's own
// routes read besides.
type Node interface {
	ndbenchapi.Node
	// Intervals returns the encoded 1 s intervals from seq on.
	Intervals(seq uint64) stats.IntervalsPage
	// ReportInput gathers the report of the current or last driver session.
	ReportInput(version string) report.Input
}

var _ Node = (*node.Node)(nil)
