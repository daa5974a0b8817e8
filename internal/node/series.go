package node

import (
	"context"
	"time"

	"github.com/ndbench/ndbench/internal/stats"
)

// startTicks starts the collector's 1 s ticks from now.
func (i *Node) startTicks() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); i.coll.Run(ctx) }()
	i.stopTicks, i.ticking = cancel, done
}

// IntervalsKept is how many encoded 1 s intervals a node keeps for readers (5 minutes).
const IntervalsKept = 300

// IntervalsIdle is how long the node keeps encoding intervals after the last read.
const IntervalsIdle = 5 * time.Minute

// Intervals returns the encoded 1 s intervals from seq on (see stats.IntervalLog).
func (i *Node) Intervals(seq uint64) stats.IntervalsPage { return i.intervals.Since(seq) }

// Finish ends the time series: it stops the 1 s ticks and closes the last, partial
// interval now, so a report built next counts everything recorded and ends where the run
// did. The collector's views stay readable; later calls do nothing (Close calls it).
func (i *Node) Finish() {
	i.ticks.Lock()
	defer i.ticks.Unlock()
	if !i.finished.IsZero() {
		return
	}
	i.stopTicks()
	<-i.ticking
	i.intervals.Close()
	now := i.clk.Now()
	i.coll.Tick(now)
	i.finished = now
}
