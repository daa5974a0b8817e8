package main

import (
	"os"
	"strings"
	"testing"
)

// generated lists the drivers whose docs/drivers.md section is this command's output;
// the older sections were written before it and are checked for their options only
// (drivers/all).
var generated = []string{"cassandra", "composite", "dynamodb", "elasticsearch", "geode", "gremlin", "grpc", "http", "postgres", "redis", "script"}

// TestSectionsUpToDate fails when a generated section of docs/drivers.md differs from
// what the registry and the package comment produce now: regenerate it with
// go run ./scripts/driverdoc NAME.
func TestSectionsUpToDate(t *testing.T) {
	page, err := os.ReadFile("../../docs/drivers.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range generated {
		var b strings.Builder
		if err := section(&b, "../..", name); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), b.String()) {
			t.Errorf("docs/drivers.md: the %s section is not what go run ./scripts/driverdoc %s prints; regenerate it", name, name)
		}
	}
}
