package ndbenchapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// ndbenchClients maps NDBench client plugin names (the values of their
// @NdBenchClientPlugin annotations) onto the ndbench driver that talks to the same store
// with the same key-value data model. Plugins with another data model (batches, UDTs, Redis
// hashes, secondary indexes, transactions, graphs) have no entry: mapping them onto a
// plain key-value driver would benchmark something else under their name.
func ndbenchClients() map[string]string {
	return map[string]string{
		"CassJavaDriverPlugin":           "cassandra",
		"CassJavaDriverGeneric":          "cassandra",
		"CassJavaDriverGeneric4":         "cassandra",
		"CassAstyanaxPlugin":             "cassandra",
		"ElassandraCassJavaDriverPlugin": "cassandra",
		"DynoJedis":                      "redis", // Dynomite speaks the Redis protocol
		"DynoJedisPlugin":                "redis",
		"DynoGetSetPipeline":             "redis",
		"LocalDynomiteProxyPlugin":       "redis",
		"EVCacheTest":                    "memcached", // EVCache is memcached underneath
		"CockroachDBSimplePlugin":        "postgres",  // CockroachDB speaks PostgreSQL
		"InMemoryTest":                   "memory",
		"ES_REST":                        "elasticsearch",
		"DynamoDBKeyValue":               "dynamodb",
		"DynamoDBv2KeyValue":             "dynamodb",
		"DaxKeyValue":                    "dynamodb",
	}
}

// resolveClient returns the registered driver a driver/init/{client} name stands for: a
// driver name (any case) or an NDBench client name. The error lists what is accepted.
func resolveClient(client string) (string, error) {
	for _, n := range driver.Names() {
		if strings.EqualFold(n, client) {
			return n, nil
		}
	}
	clients := ndbenchClients()
	for c, d := range clients {
		if !strings.EqualFold(c, client) {
			continue
		}
		if _, ok := driver.Lookup(d); ok {
			return d, nil
		}
		return "", fmt.Errorf("%w: NDBench client %s maps onto driver %s, which is not in this build; registered drivers: %s",
			driver.ErrUnknownDriver, c, d, strings.Join(driver.Names(), ", "))
	}
	var mapped []string
	for _, c := range slices.Sorted(maps.Keys(clients)) {
		if _, ok := driver.Lookup(clients[c]); ok {
			mapped = append(mapped, c+" ("+clients[c]+")")
		}
	}
	return "", fmt.Errorf("%w %q; accepted: the drivers %s, or the NDBench clients %s",
		driver.ErrUnknownDriver, client, strings.Join(driver.Names(), ", "), strings.Join(mapped, ", "))
}
