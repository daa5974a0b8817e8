// Command ndbench is a benchmark for data stores and microservices. See the README.
package main

import (
	"context"
	"os"
	"runtime/debug"
	"time"

	goredis "github.com/redis/go-redis/v9"

	_ "github.com/ndbench/ndbench/drivers/all" // every driver, registered from init
	"github.com/ndbench/ndbench/internal/cli"
)

// discard drops a client library's own log lines.
type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// Start-up's garbage collection: the collector's target while the process starts, and
// how long start-up lasts. Parsing the configuration, the drivers' option schemas, the
// statistics' histograms and the store's connections allocate ~10 MB that stays live;
// at the default target (GOGC=100, from a 4 MB heap) that took four collections in
// the first 0.4 s, each marking everything allocated so far: ~60 M instructions, about
// a tenth of the user CPU of an 8-second PostgreSQL run. At 400 one or two do.
const (
	startupGCPercent = 400
	startupGCWindow  = 2 * time.Second
)

// startupGC sets the collector's target to startupGCPercent for the start-up window and
// then puts back the one in force (GOGC's, or the default). A GOGC in the environment
// (getenv) is the user's choice and left alone. after schedules the restore
// (time.AfterFunc).
func startupGC(getenv func(string) string, after func(time.Duration, func())) {
	if getenv("GOGC") != "" {
		return
	}
	prev := debug.SetGCPercent(startupGCPercent)
	after(startupGCWindow, func() { debug.SetGCPercent(prev) })
}

func main() {
	startupGC(os.Getenv, func(d time.Duration, f func()) { time.AfterFunc(d, f) })
	// go-redis logs every failed dial through a process-wide logger: during an outage that
	// is thousands of lines a second over the live output, for failures the run already
	// counts by class. The composition root owns process-wide settings, so it is set here.
	goredis.SetLogger(discard{})
	os.Exit(cli.Main(os.Args[1:]))
}
