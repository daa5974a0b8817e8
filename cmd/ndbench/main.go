// Command ndbench is a benchmark for data stores and microservices. See the README.
package main

import (
	"os"

	_ "github.com/ndbench/ndbench/drivers/all" // every driver, registered from init
	"github.com/ndbench/ndbench/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
