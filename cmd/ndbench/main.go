// Command ndbench is a benchmark for data stores and microservices. See the README.
package main

import (
	"context"
	"os"

	goredis "github.com/redis/go-redis/v9"

	_ "github.com/ndbench/ndbench/drivers/all" // every driver, registered from init
	"github.com/ndbench/ndbench/internal/cli"
)

// discard drops a client library's own log lines.
type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

func main() {
	// go-redis logs every failed dial through a process-wide logger: during an outage that
	// is thousands of lines a second over the live output, for failures the run already
	// counts by class. The composition root owns process-wide settings, so it is set here.
	goredis.SetLogger(discard{})
	os.Exit(cli.Main(os.Args[1:]))
}
