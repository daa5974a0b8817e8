// Command crossvet is go vet for another operating system without compiling for it.
//
// `GOOS=windows go vet ./...` needs every dependency's export data for windows, so on a
// machine with an empty build cache it compiles the whole dependency graph (SQLite in Go,
// the AWS SDK, etcd, Kubernetes' API types, ...) once per vetted system: minutes each, and
// most of a fresh CI run's lint stage. crossvet runs the same analyzers as go vet on the
// packages named on its command line (and their tests), type-checked from source with the
// target's build constraints (GOOS, GOARCH and -tags are honoured as by go vet): a symbol
// that does not exist on the target (a unix-only syscall in a file without a build tag) is
// a type error here as there, and no object code is produced.
//
// Dependencies outside the named packages (the standard library, third-party modules) are
// type-checked for their declarations only (go/types' IgnoreFuncBodies), which is all the
// named packages' type-check needs of them, and the analyzers do not run on them. What that
// leaves out against `GOOS=... go vet`: the facts that analyzers derive from those
// dependencies' bodies (a third-party wrapper of fmt.Sprintf is not known to printf; the
// standard library's print functions are built into printf, and facts still flow between
// the named packages), and a dependency whose function bodies do not compile for the target
// (that would fail the build of ndbench for it, not a vet finding). The earlier crossvet
// (multichecker) type-checked every dependency in full and ran the analyzers with facts on
// all of them; docs/performance.md ("CI time") has the two side by side.
//
// Usage, from the Makefile's lint:
//
//	GOOS=windows GOARCH=amd64 go run ./scripts/crossvet -tags=integration ./...
//
// It prints type errors and findings as file:line:col: message and exits 1 if there are any.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
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
	"golang.org/x/tools/go/packages"
)

// analyzers are the ones cmd/vet runs by default (go1.26), so a finding here is one go vet
// would report on that system.
var analyzers = []*analysis.Analyzer{
	appends.Analyzer, asmdecl.Analyzer, assign.Analyzer, atomic.Analyzer,
	bools.Analyzer, buildtag.Analyzer, cgocall.Analyzer, composite.Analyzer,
	copylock.Analyzer, defers.Analyzer, directive.Analyzer, errorsas.Analyzer,
	framepointer.Analyzer, hostport.Analyzer, httpresponse.Analyzer, ifaceassert.Analyzer,
	loopclosure.Analyzer, lostcancel.Analyzer, nilfunc.Analyzer, printf.Analyzer, shift.Analyzer,
	sigchanyzer.Analyzer, slog.Analyzer, stdmethods.Analyzer, stdversion.Analyzer,
	stringintconv.Analyzer, structtag.Analyzer, testinggoroutine.Analyzer,
	tests.Analyzer, timeformat.Analyzer, unmarshal.Analyzer, unreachable.Analyzer,
	unsafeptr.Analyzer, unusedresult.Analyzer, waitgroup.Analyzer,
}

func main() {
	tags := flag.String("tags", "", "comma-separated build tags, as go vet's -tags")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: GOOS=os GOARCH=arch crossvet [-tags=t1,t2] packages...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	n, err := run(*tags, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "crossvet:", err)
		os.Exit(1)
	}
	if n > 0 {
		os.Exit(1)
	}
}

// run vets the packages matched by patterns and returns how many errors and findings it
// printed.
func run(tags string, patterns []string) (int, error) {
	cfg := &packages.Config{
		// Metadata only: file lists and the import graph, from `go list -deps` without
		// -export, so nothing is compiled. Types come from check below.
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
			packages.NeedImports | packages.NeedDeps | packages.NeedModule,
		Tests: true,
	}
	if tags != "" {
		cfg.BuildFlags = []string{"-tags=" + tags}
	}
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", strings.Join(patterns, " "), err)
	}
	goarch := os.Getenv("GOARCH")
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	l := &loader{
		fset:  token.NewFileSet(),
		sizes: types.SizesFor("gc", goarch),
		root:  map[*packages.Package]bool{},
		done:  map[*packages.Package]chan struct{}{},
		sem:   make(chan struct{}, runtime.GOMAXPROCS(0)),
	}
	var analyzed []*packages.Package
	for _, p := range roots {
		// The generated test main (ID "p.test") is go test's, not ours.
		if strings.HasSuffix(p.ID, ".test") {
			continue
		}
		l.root[p] = true
		analyzed = append(analyzed, p)
	}
	packages.Visit(roots, nil, func(p *packages.Package) { l.done[p] = make(chan struct{}) })
	var wg sync.WaitGroup
	for p := range l.done {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.check(p)
		}()
	}
	wg.Wait()

	// Errors first: a package that does not type-check for the target is the finding
	// this command exists for. Every package's errors are printed once, in order.
	var errs []string
	seen := map[string]bool{}
	packages.Visit(roots, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			if s := e.Error(); !seen[s] {
				seen[s] = true
				errs = append(errs, s)
			}
		}
	})
	sort.Strings(errs)
	for _, e := range errs {
		fmt.Println(e)
	}

	// The analyzers' facts flow along Imports: keep only the edges between the analyzed
	// packages, so that analyzers with facts do not run on the dependencies (whose function
	// bodies were not type-checked).
	for p := range l.done {
		if !l.root[p] {
			p.Imports = nil
			continue
		}
		kept := map[string]*packages.Package{}
		for path, q := range p.Imports {
			if l.root[q] {
				kept[path] = q
			}
		}
		p.Imports = kept
	}
	var ok []*packages.Package
	for _, p := range analyzed {
		if !p.IllTyped {
			ok = append(ok, p)
		}
	}
	g, err := checker.Analyze(analyzers, ok, nil)
	if err != nil {
		return len(errs), fmt.Errorf("running the analyzers: %w", err)
	}
	findings := 0
	for act := range g.All() {
		if act.IsRoot {
			findings += len(act.Diagnostics)
		}
		if act.Err != nil {
			findings++
		}
	}
	if err := g.PrintText(os.Stdout, -1); err != nil {
		return len(errs) + findings, fmt.Errorf("printing the findings: %w", err)
	}
	return len(errs) + findings, nil
}

// loader type-checks a package graph from source, dependencies before their importers,
// as many packages at a time as there are CPUs.
type loader struct {
	fset  *token.FileSet
	sizes types.Sizes
	root  map[*packages.Package]bool // analyzed: fully type-checked
	done  map[*packages.Package]chan struct{}
	sem   chan struct{}
}

// check type-checks p once its imports are done, fills in what the analyzers read (Fset,
// Syntax, Types, TypesInfo, TypesSizes, IllTyped, Errors) and closes p's done channel.
func (l *loader) check(p *packages.Package) {
	defer close(l.done[p])
	for _, q := range p.Imports {
		<-l.done[q]
	}
	l.sem <- struct{}{}
	defer func() { <-l.sem }()

	p.Fset = l.fset
	p.TypesSizes = l.sizes
	p.Types = types.NewPackage(p.PkgPath, p.Name)
	if p.PkgPath == "unsafe" {
		p.Types = types.Unsafe
		return
	}
	full := l.root[p]
	mode := parser.SkipObjectResolution
	if full {
		mode |= parser.ParseComments
	}
	for _, name := range p.CompiledGoFiles {
		f, err := parser.ParseFile(l.fset, name, nil, mode)
		if err != nil {
			var list scanner.ErrorList
			if asList(err, &list) {
				for _, e := range list {
					p.Errors = append(p.Errors, packages.Error{Pos: e.Pos.String(), Msg: e.Msg, Kind: packages.ParseError})
				}
			} else {
				p.Errors = append(p.Errors, packages.Error{Msg: err.Error(), Kind: packages.ParseError})
			}
		}
		if f != nil {
			p.Syntax = append(p.Syntax, f)
		}
	}
	info := &types.Info{}
	if full {
		info = &types.Info{
			Types:        map[ast.Expr]types.TypeAndValue{},
			Defs:         map[*ast.Ident]types.Object{},
			Uses:         map[*ast.Ident]types.Object{},
			Implicits:    map[ast.Node]types.Object{},
			Instances:    map[*ast.Ident]types.Instance{},
			Scopes:       map[ast.Node]*types.Scope{},
			Selections:   map[*ast.SelectorExpr]*types.Selection{},
			FileVersions: map[*ast.File]string{},
		}
	}
	p.TypesInfo = info
	tc := &types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if path == "unsafe" {
				return types.Unsafe, nil
			}
			q := p.Imports[path]
			if q == nil || q.Types == nil {
				return nil, fmt.Errorf("no package %s among %s's imports", path, p.PkgPath)
			}
			return q.Types, nil
		}),
		IgnoreFuncBodies: !full,
		// cgo is off when cross-vetting (go list leaves out cgo files for another system),
		// as it was for go vet with GOOS set.
		FakeImportC: true,
		Sizes:       l.sizes,
		Error: func(err error) {
			if te, ok := err.(types.Error); ok && te.Soft && !full {
				return
			}
			p.Errors = append(p.Errors, packages.Error{Pos: posOf(err), Msg: msgOf(err), Kind: packages.TypeError})
			p.TypeErrors = appendTypeError(p.TypeErrors, err)
		},
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		tc.GoVersion = "go" + p.Module.GoVersion
	}
	_ = types.NewChecker(tc, l.fset, p.Types, info).Files(p.Syntax)
	p.IllTyped = len(p.Errors) > 0
	for _, q := range p.Imports {
		if q.IllTyped {
			p.IllTyped = true
		}
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func asList(err error, list *scanner.ErrorList) bool {
	l, ok := err.(scanner.ErrorList)
	if ok {
		*list = l
	}
	return ok
}

func posOf(err error) string {
	if te, ok := err.(types.Error); ok {
		return te.Fset.Position(te.Pos).String()
	}
	return ""
}

func msgOf(err error) string {
	if te, ok := err.(types.Error); ok {
		return te.Msg
	}
	return err.Error()
}

func appendTypeError(list []types.Error, err error) []types.Error {
	if te, ok := err.(types.Error); ok {
		return append(list, te)
	}
	return list
}
