// Command crossvet is go vet for another operating system without compiling for it.
//
// `GOOS=windows go vet ./...` needs every dependency's export data for windows, so on a
// machine with an empty build cache it compiles the whole dependency graph (SQLite in Go,
// the AWS SDK, etcd, Kubernetes' API types, ...) once per vetted system: minutes each, and
// most of a fresh CI run's lint stage. crossvet runs the same analyzers as go vet, but
// loads every package from source with the target's build constraints (GOOS, GOARCH and
// -tags are honoured as by go vet) and type-checks it: a symbol that does not exist on
// the target (a unix-only syscall in a file without a build tag) is a type error here as
// there, and no object code is produced. Usage, from the Makefile's lint:
//
//	GOOS=windows GOARCH=amd64 go run ./scripts/crossvet -tags=integration ./...
package main

import (
	"golang.org/x/tools/go/analysis/multichecker"
	"golang.org/x/tools/go/analysis/passes/appends"
	"golang.org/x/tools/go/analysis/passes/asmdecl"
	"golang.org/x/tools/go/analysis/passes/assign"
	"golang.org/x/tools/go/analysis/passes/atomic"
	"golang.org/x/tools/go/analysis/passes/bools"
	"golang.org/x/tools/go/analysis/passes/buildtag"
	"golang.org/x/tools/go/analysis/passes/cgocall"
	"golang.org/x/tools/go/analysis/passes/composite"
	"golang.org/x/tools/go/analysis/passes/copylock"
	"golang.org/x/tools/go/analysis/passes/defers"
	"golang.org/x/tools/go/analysis/passes/directive"
	"golang.org/x/tools/go/analysis/passes/errorsas"
	"golang.org/x/tools/go/analysis/passes/framepointer"
	"golang.org/x/tools/go/analysis/passes/hostport"
	"golang.org/x/tools/go/analysis/passes/httpresponse"
	"golang.org/x/tools/go/analysis/passes/ifaceassert"
	"golang.org/x/tools/go/analysis/passes/loopclosure"
	"golang.org/x/tools/go/analysis/passes/lostcancel"
	"golang.org/x/tools/go/analysis/passes/nilfunc"
	"golang.org/x/tools/go/analysis/passes/printf"
	"golang.org/x/tools/go/analysis/passes/shift"
	"golang.org/x/tools/go/analysis/passes/sigchanyzer"
	"golang.org/x/tools/go/analysis/passes/slog"
	"golang.org/x/tools/go/analysis/passes/stdmethods"
	"golang.org/x/tools/go/analysis/passes/stdversion"
	"golang.org/x/tools/go/analysis/passes/stringintconv"
	"golang.org/x/tools/go/analysis/passes/structtag"
	"golang.org/x/tools/go/analysis/passes/testinggoroutine"
	"golang.org/x/tools/go/analysis/passes/tests"
	"golang.org/x/tools/go/analysis/passes/timeformat"
	"golang.org/x/tools/go/analysis/passes/unmarshal"
	"golang.org/x/tools/go/analysis/passes/unreachable"
	"golang.org/x/tools/go/analysis/passes/unsafeptr"
	"golang.org/x/tools/go/analysis/passes/unusedresult"
	"golang.org/x/tools/go/analysis/passes/waitgroup"
)

func main() {
	// The analyzers cmd/vet runs by default (go1.26), so a finding here is one go vet
	// would report on that system.
	multichecker.Main(
		appends.Analyzer, asmdecl.Analyzer, assign.Analyzer, atomic.Analyzer,
		bools.Analyzer, buildtag.Analyzer, cgocall.Analyzer, composite.Analyzer,
		copylock.Analyzer, defers.Analyzer, directive.Analyzer, errorsas.Analyzer,
		framepointer.Analyzer, hostport.Analyzer, httpresponse.Analyzer, ifaceassert.Analyzer,
		loopclosure.Analyzer, lostcancel.Analyzer, nilfunc.Analyzer, printf.Analyzer, shift.Analyzer,
		sigchanyzer.Analyzer, slog.Analyzer, stdmethods.Analyzer, stdversion.Analyzer,
		stringintconv.Analyzer, structtag.Analyzer, testinggoroutine.Analyzer,
		tests.Analyzer, timeformat.Analyzer, unmarshal.Analyzer, unreachable.Analyzer,
		unsafeptr.Analyzer, unusedresult.Analyzer, waitgroup.Analyzer,
	)
}
