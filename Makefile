# ndbench — the README's two commands: `make run` and `make test`.
# Everything a fresh Debian machine needs is installed from here (Go modules by the go
# tool; servers for the integration tests by scripts/install-test-deps.sh).

GO          ?= go
BIN         := bin/ndbench
# Build tags of every go command here. pebblegozstd: pebble compresses with klauspost's
# zstd in Go instead of DataDog/zstd, a cgo wrapper of the C library whose gcc compile
# (~2.3 MB of C, serial) a new machine paid once per build mode (plain for vet and the
# node binary, again under -race). The container image already builds without cgo, so it
# already runs this zstd. The tag must be on every go build, vet and test of a run (an
# explicit -tags replaces GOFLAGS' -tags): one without it compiles pebble and all that
# imports it a second time (docs/performance.md, "CI time").
TAGS        := integration,pebblegozstd
ifeq ($(filter -tags=pebblegozstd,$(GOFLAGS)),)
export GOFLAGS := $(strip $(GOFLAGS) -tags=pebblegozstd)
endif
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Integration tests start real servers (Redis, Memcached, PostgreSQL, Cassandra, DynamoDB
# Local, Elasticsearch, OpenSearch, Gremlin Server, Geode, twemproxy, nginx and our own
# HTTP and gRPC services) on loopback, and fleets of ndbench processes; ./internal/history/ runs its
# store's tests against PostgreSQL as against SQLite; ./deploy/ checks the Helm chart with the helm that
# scripts/install-test-deps.sh installs.
# Longest first: scripts/integration starts them in the order listed (go list keeps it and
# drops a package named twice), so the longest start together and the short ones fill the
# slots after them; a long package listed late is the stage's tail. The JVM packages
# (INTEGRATION_JVM, two at a time) are among the longest and use most of a core each
# (elasticsearch ~145 s of CPU in ~150 s, cassandra ~115 in ~130): after every other
# package they were the last ~250 s of stop 50's 636 s stage, and listed beside engine,
# Elasticsearch did not start within its 150 s beside the stage's first compiles (the node
# binary, cli's test binary) at load ~30 (docs/performance.md, "The test suite's own
# time"). So they come right after cli's and cluster's shards, which start first with the
# stage's big compiles (the node binary, those two test binaries): elasticsearch and
# cassandra, geode when one of them ends, gremlin and dynamodb after cluster/merge and
# testserver.
INTEGRATION := ./internal/engine/ ./internal/cli/ ./internal/cluster/ ./drivers/elasticsearch/ ./drivers/cassandra/ \
	./drivers/geode/ ./internal/cluster/merge/ ./internal/testserver/ ./drivers/gremlin/ ./drivers/dynamodb/ \
	./internal/cluster/... ./internal/netlab/ ./internal/history/ ./drivers/... ./deploy/ ./scripts/benchpeers/
# The container image: `make image` (needs a Docker engine with BuildKit).
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE       ?= ndbench:$(VERSION)

.PHONY: build run test test-extended unit unit-rest integration ui fuzz lint bench bench-micro bench-program bench-drivers bench-drivers-inprocess soak clean image manifests

build:
	$(GO) build -ldflags "-X github.com/ndbench/ndbench/internal/cli.version=$(VERSION)" -o $(BIN) ./cmd/ndbench

# A 30 s benchmark on the embedded store (pebble, no server needed), with live output:
# backfill 100k keys, then 80/20 reads/writes at 5,000 ops/s. Each run is recorded in
# the results history (a SQLite file, git-ignored), and the trend of the make runs so
# far is printed with its change points (docs/history.md): a second make run shows one.
RESULTS ?= ndbench-results.db
run: build
	./$(BIN) run --duration 30s --backfill \
	  --set workload.numKeys=100000 --set workload.backfillWorkers=4 \
	  --set workload.readRate=4000 --set workload.writeRate=1000 \
	  --set workload.pattern=zipfian --report ndbench-report.json \
	  --results $(RESULTS) --tag source=make-run
	./$(BIN) history trend read.p99 --results $(RESULTS) --tag source=make-run --last 20

# The whole suite: lint, unit tests under the race detector, integration tests against
# real servers, the web UI driven in a real browser, and a bounded run of every fuzz
# target. A server that does not start fails the run. On a new machine the installs
# (apt, the servers' distributions, helm, Chromium, npm) wait mostly on the network, lint
# and the unit tests on the CPU, so scripts/test.sh runs the installs beside them and
# waits for both before the integration stage.
test:
	MAKE="$(MAKE)" bash scripts/test.sh

# lint also vets for the other systems users run on (macOS, Windows), so Linux-only code
# (prctl, Pdeathsig, /proc) that escaped its build tag fails here rather than on a user's
# machine. Linux on ARM type-checks the same files as linux/amd64 except those specific to
# an architecture, so only the packages that have such files (ARCH_PKGS; the check below
# fails when one appears elsewhere) are vetted for linux/arm64. `go vet` for another
# system compiled every dependency for it first (2 min 44 s for linux/arm64 with an empty
# build cache; lint took 13 min of a 33 min CI rehearsal on a new machine); crossvet
# type-checks from source instead (docs/performance.md, "CI time").
ARCH_PKGS := ./internal/pacer
lint:
	bash scripts/check-no-binaries.sh
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@# Every file builds with -tags integration (none says !integration), so vetting with the
	@# tag covers the plain build too, at half the time.
	@if git grep -l 'go:build.*!integration' -- '*.go' >/dev/null; then echo "a file excludes the integration tag: vet both builds"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...
	@# The other systems are vetted from source (scripts/crossvet: go vet's analyzers on
	@# our packages type-checked for the target, their dependencies for declarations only, no
	@# object code): `GOOS=windows go vet` compiles every dependency for windows first,
	@# minutes per system on a new machine.
	$(GO) build -o bin/crossvet ./scripts/crossvet
	GOOS=darwin GOARCH=arm64 ./bin/crossvet -tags=$(TAGS) ./...
	GOOS=windows GOARCH=amd64 ./bin/crossvet -tags=$(TAGS) ./...
	@for f in $$(git ls-files '*.go' '*.s' | grep -E '_(amd64|arm64|386|arm|riscv64|ppc64le|s390x|loong64|mips[a-z0-9]*|wasm)(_test)?\.(go|s)$$'; \
	  git grep -l -E '^//go:build.*[ !(](amd64|arm64|386|arm|riscv64|ppc64le|s390x|loong64|wasm)([ )&|]|$$)' -- '*.go'); do \
	  case " $(ARCH_PKGS) " in *" ./$$(dirname $$f) "*) ;; \
	  *) echo "$$f is specific to an architecture: add ./$$(dirname $$f) to ARCH_PKGS"; exit 1;; esac; done
	GOOS=linux GOARCH=arm64 ./bin/crossvet -tags=$(TAGS) $(ARCH_PKGS)
	$(GO) run $(STATICCHECK) -tags $(TAGS) ./...

# Auto-tune's searches measure the generator too, so they run without the race detector
# (under it they skip): here a generator-capped search must be reported client-bound. The
# capacity bar runs in every unit run on simulated time (TestSearchFindsModelCapacity: a
# queue of known capacity, 100 seeds, within 3%); the same search against the real memory
# store (within 5% at 5k, 20k and 60k ops/s) runs in test-extended: on a shared 2-core
# machine the knee it measures moves by ±10% from run to run (docs/performance.md,
# "Auto-tune"), which is a measurement of the machine, not a pass/fail of a change.
unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -timeout 15m -run 'TestClientBoundIsNotCapacity' ./internal/autotune/

# make test runs each package's tests once: the packages in INTEGRATION run in
# `integration`, with the tag, and their unit tests with them (run twice, they added ~200 s
# of package time to a fresh CI run under -race, 2 packages at a time).
# Only packages with test files: `go test -race` compiles a package without tests, and all
# it imports, under -race just to print "no test files" (scripts/crossvet alone pulled 75
# packages of golang.org/x/tools and go/types into a fresh run's race build); lint's vet has
# compiled every package already, with the integration tag that every file builds with.
UNIT_REST = $(filter-out $(shell $(GO) list $(INTEGRATION)),$(shell $(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...))
# TestClientBoundIsNotCapacity (without -race, see unit) runs after the race run, not beside
# it, though it is ~50 s of mostly waiting: it wants one step of its search within SLA, and
# beside a race run on a loaded machine its client started reads 100-700 ms late at 500
# ops/s, in both of its searches (docs/performance.md, "CI time").
unit-rest:
	$(GO) test -race -count=1 $(UNIT_REST)
	$(GO) test -count=1 -timeout 15m -run 'TestClientBoundIsNotCapacity' ./internal/autotune/

# The whole auto-tune capacity bar (5k, 20k 80/20 and 60k ops/s, ~2 min each); run it on
# a quiet machine before a release and after changing the search, the pacer or the engine.
test-extended:
	$(GO) test -count=1 -timeout 20m -v -run 'TestFindsMemoryCapacity|TestClientBoundIsNotCapacity' ./internal/autotune/

# Every parser of outside input has a fuzz target (docs/security.md). `go test` runs each
# target's seeds and its crashers kept in testdata/fuzz/ as ordinary tests; here each also
# fuzzes (go test -fuzz takes one target per invocation) for a number of executions, the
# third field of its FUZZ_TARGETS entry, sized to 3-8 s each on an idle machine here: the
# seeds and crashers already run in every unit run, so what this stage adds is new inputs,
# and halving the counts (they were sized to 5-15 s) costs half of those; longer runs are
# FUZZTIME's (below).
# A count, not a duration: Go 1.26's fuzz coordinator fails a run whose -fuzztime deadline
# fires while a worker is still answering ("context deadline exceeded", no crasher;
# golang/go#75804, fixed in Go 1.27), which CI met on a busy machine. A count has no
# deadline. Longer runs: make fuzz FUZZTIME=10m (every target for that long, with that
# race's risk) or FUZZTIME=5000000x.
# A crash fails the run and leaves its input in the package's testdata/fuzz/<target>/:
# commit it with the fix. Every func FuzzX in the repository must be listed here
# (TestMakeFuzzRunsEveryTarget checks it).
# -fuzzminimizetime 10x: parsing runs through code whose coverage depends on map order
# (sorting keys gathered from maps: encoding/json, yaml, the config's entries), so nearly
# every input seems to find new coverage; by default the worker then minimizes it for up
# to 60 s before the coordinator drops it as not reproducible, and FuzzParse did about ten
# executions a minute. Ten attempts bound that to milliseconds.
# FUZZ_PARALLEL: fuzz workers (go test -parallel; every core when empty). make test runs
# the fuzzers on one core beside the browser tests (scripts/test.sh).
FUZZTIME    ?=
FUZZ_PARALLEL ?=
FUZZ_TARGETS := FuzzHistogramDecoder:./internal/stats/:50000x FuzzIntervalsPage:./internal/stats/:50000x \
	FuzzProperties:./internal/config/:50000x FuzzConfigPatch:./internal/config/:15000x \
	FuzzConfigFile:./internal/config/source/:10000x FuzzParse:./internal/scenario/scenariofuzz/:10000x \
	FuzzRespReader:./drivers/redis/:25000x FuzzTextReplies:./drivers/memcached/:25000x \
	FuzzCheckValue:./internal/workload/:50000x FuzzTable:./drivers/memory/:20000x
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; budget=$(or $(FUZZTIME),$${rest#*:}); \
	  echo "fuzz $$name for $$budget"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime 10x $(if $(FUZZ_PARALLEL),-parallel $(FUZZ_PARALLEL)) $$pkg; \
	done

# scripts/integration runs the packages' tests (go test -race -tags integration, each
# package in a process of its own, INTEGRATION_P processes at a time; go test's default is
# one per core): the integration packages mostly wait, for real runs of whole seconds,
# servers starting and fleets of ndbench processes. cli, cluster and engine side by side
# used 0.65 of the 2 cores (340 s of CPU in 523 s) (docs/performance.md, "CI time").
# - The ndbench binary that cli's and cluster's fleet tests exec is built once and handed to
#   them in TEST_NDBENCH_BIN (`go test` alone builds its own).
# - cli and cluster (INTEGRATION_SPLIT), ~400 s of tests each that cannot run in parallel
#   inside one process (a run's verdict reads the process's CPU), have their tests divided
#   among INTEGRATION_SHARDS processes of one test binary compiled once, balanced by the
#   tests' times recorded in scripts/integration/testtimes (cli's run from under a second
#   to ~90 s, so equal counts made shards of 203 s and 285 s). A shard counts as
#   INTEGRATION_SHARD_WEIGHT of a process against INTEGRATION_P: it mostly waits (285 s of
#   wall for 59 s of CPU), but at 0.5 (engine and six shards at once) engine, the stage's
#   CPU-bound critical path, took 640 s against 457 s and three fleet tests failed on
#   timing, at load 10-32 (docs/performance.md, "The test suite's own time"); 1 until a
#   quiet machine shows 0.5 is safe. Record new times after adding long tests:
#   go run ./scripts/integration -json ... > run.json, then
#   go run ./scripts/integration -split "$$(go list ./internal/cli/ ./internal/cluster/)" -times-from run.json > scripts/integration/testtimes
# - The packages whose servers are JVMs (Cassandra, Elasticsearch and OpenSearch, Geode,
#   Gremlin Server, DynamoDB Local; 0.5-1.5 GB and seconds of CPU to start each, though
#   fewer since they compile with C1 only: a Cassandra start 7.6 s of CPU, not 13.5) start in
#   their place in INTEGRATION's order, two at most at a time: three at once beside the
#   compile starved them, and a Cassandra session's Close took over 20 s (drivers/cassandra's
#   TestZConformance, in the first CI run with three packages at a time). While two run,
#   the next other package starts instead.
# Every job runs whatever the others give, so a CI log shows every failure.
INTEGRATION_P ?= 4
INTEGRATION_SPLIT := ./internal/cli/ ./internal/cluster/
INTEGRATION_SHARDS ?= 4
INTEGRATION_SHARD_WEIGHT ?= 1
INTEGRATION_JVM := ./drivers/cassandra/ ./drivers/elasticsearch/ ./drivers/geode/ ./drivers/gremlin/ ./drivers/dynamodb/
integration:
	bash scripts/install-test-deps.sh
	$(GO) run ./scripts/integration -tags $(TAGS) -p $(INTEGRATION_P) -timeout 20m \
	  -split "$(shell $(GO) list $(INTEGRATION_SPLIT))" -shards $(INTEGRATION_SHARDS) -shard-weight $(INTEGRATION_SHARD_WEIGHT) \
	  -times scripts/integration/testtimes -heavy "$(shell $(GO) list $(INTEGRATION_JVM))" -heavy-p 2 \
	  $(shell $(GO) list $(INTEGRATION))

# The web UI in headless Chromium (Debian's package) driven by playwright-core from npm;
# the tests start bin/ndbench serve themselves.
# Two files at a time (UI_CONCURRENCY): each file starts its own serve on a free port and
# its own Chromium, and most of a file's time is waiting for runs of whole seconds, so two
# side by side took two thirds of the time of one at a time (297 s against 442 s, measured
# side by side on 2 loaded cores; docs/performance.md, "CI time").
UI_CONCURRENCY ?= 2
ui: build
	bash scripts/install-ui-test-deps.sh
	cd web-tests && node --test --test-concurrency=$(UI_CONCURRENCY)

# The container image (deploy/Dockerfile): a static binary on distroless, non-root.
image:
	docker build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE) .

# deploy/kubernetes/ndbench.yaml: the Helm chart rendered with its defaults, for kubectl apply
# (scripts/render-manifests.sh). The deploy tests fail when the committed file is stale.
manifests:
	bash scripts/render-manifests.sh >deploy/kubernetes/ndbench.yaml.tmp
	mv deploy/kubernetes/ndbench.yaml.tmp deploy/kubernetes/ndbench.yaml

# Benchmarks: micro (go test -bench), whole-program figures, and ndbench side by side with
# redis-benchmark, pgbench and latte on real servers; see docs/performance.md.
bench: bench-micro bench-program bench-drivers

bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./internal/... ./drivers/memory/ ./drivers/pebble/ | tee bench-micro.txt

bench-program: build
	bash scripts/bench.sh $(BIN)

# ndbench and its peers (pgbench, redis-benchmark, memtier_benchmark when present or
# MEMTIER=path, wrk, vegeta) as whole processes side by side on local servers, interleaved
# rounds, client CPU from each process's own rusage and p99 beside p99, closed and open
# loop (scripts/benchpeers; docs/performance.md's headline table). BENCH_PEERS_FLAGS passes flags, e.g. BENCH_PEERS_FLAGS='-pairs postgres -rounds 5'.
bench-drivers: build
	NDBENCH_NO_LATTE=1 bash scripts/install-bench-peers.sh
	$(GO) run ./scripts/benchpeers -ndbench $(BIN) -out bench-results/peers $(BENCH_PEERS_FLAGS)

# The same drivers measured in-process (go test -bench), with latte for Cassandra: for
# profiling, not for the headline figures (latte is built with cargo once).
bench-drivers-inprocess:
	bash scripts/bench-drivers.sh

# The billion-operation soak (not in CI): serve on the memory store until 10^9 operations
# were sent, sampling RSS, goroutines, the interval log and the HDR log (scripts/soak.sh;
# SOAK_OPS, SOAK_RATE, SOAK_EVERY bound it; docs/performance.md records its figures).
soak: build
	bash scripts/soak.sh $(BIN)

# What a connection costs (issue 35): the binary, open loop at 2,000 ops/s against a local
# Redis with 50, 1,000 and 10,000 connections, interleaved rounds, medians (client CPU per
# op and its ratio to 50 connections, peak RSS, RSS per connection; docs/performance.md,
# "Connection scale"). BENCH_CONNS_FLAGS passes flags, e.g. '-rate 5000 -rounds 5'.
.PHONY: bench-conns
bench-conns: build
	$(GO) run ./scripts/benchconns -ndbench $(BIN) -out bench-results/conns $(BENCH_CONNS_FLAGS)

clean:
	rm -rf bin ndbench-report.json bench-micro.txt bench-results
