// Package all links every bundled driver into a binary: importing it for its side effects
// registers them all, so the CLI and the server can list and open any of them by name.
// A new driver package under drivers/ is added here to ship with ndbench.
package all

import (
	// Each import registers its driver from init.
	_ "github.com/ndbench/ndbench/drivers/cassandra"
	_ "github.com/ndbench/ndbench/drivers/composite"
	_ "github.com/ndbench/ndbench/drivers/dynamodb"
	_ "github.com/ndbench/ndbench/drivers/elasticsearch"
	_ "github.com/ndbench/ndbench/drivers/geode"
	_ "github.com/ndbench/ndbench/drivers/gremlin"
	_ "github.com/ndbench/ndbench/drivers/grpc"
	_ "github.com/ndbench/ndbench/drivers/http"
	_ "github.com/ndbench/ndbench/drivers/memcached"
	_ "github.com/ndbench/ndbench/drivers/memory"
	_ "github.com/ndbench/ndbench/drivers/pebble"
	_ "github.com/ndbench/ndbench/drivers/postgres"
	_ "github.com/ndbench/ndbench/drivers/redis"
	_ "github.com/ndbench/ndbench/drivers/script"
)
