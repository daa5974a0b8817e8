// Command driverdoc prints the docs/drivers.md section of registered drivers from the
// registry: the summary, the package documentation (go/doc/comment rendered as Markdown,
// its headings one level below the driver's), the operation and option tables, so the page is
// generated, not retyped:
//
//	go run ./scripts/driverdoc http > /tmp/http.md
//
// It must run from the repository root, where it reads drivers/NAME's package comment.
package main

import (
	"fmt"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ndbench/ndbench/driver"
	_ "github.com/ndbench/ndbench/drivers/all" // registers every bundled driver
)

var anchor = regexp.MustCompile(` \{#hdr-[^}]*\}`)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/driverdoc DRIVER...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		if err := section(os.Stdout, ".", name); err != nil {
			fmt.Fprintln(os.Stderr, "driverdoc:", err)
			os.Exit(1)
		}
	}
}

// section writes driver name's section; root is the repository's root directory.
func section(w io.Writer, root, name string) error {
	def, ok := driver.Lookup(name)
	if !ok {
		return driver.UnknownDriverError(name)
	}
	schema, err := driver.Schema(def.NewOptions())
	if err != nil {
		return fmt.Errorf("driver %s: %w", name, err)
	}
	text, err := packageDoc(filepath.Join(root, "drivers", name))
	if err != nil {
		return err
	}
	var p comment.Parser
	pr := comment.Printer{HeadingLevel: 4}
	// Headings get {#hdr-...} anchors from the printer; the page's own headings have none.
	body := anchor.ReplaceAllString(string(pr.Markdown(p.Parse(text))), "")
	fmt.Fprintf(w, "## %s\n\n%s.\n\n%s\n", name, def.Summary, body)
	// Every driver's operations, built-in kinds included (delete and scan where the
	// driver implements them, rmw always), as ndbench drivers lists them.
	fmt.Fprintln(w, "| operation | kind | help |\n|---|---|---|")
	for _, o := range def.AllOperations() {
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", o.Name, o.Kind, o.Help)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| option | type | default | live | help |\n|---|---|---|---|---|")
	for _, o := range schema {
		typ := o.Type
		if o.Min != "" || o.Max != "" {
			typ += " [" + o.Min + ".." + o.Max + "]"
		}
		live := ""
		if o.Live {
			live = "yes"
		}
		help := strings.ReplaceAll(o.Help, "|", `\|`)
		if len(o.Enum) > 0 {
			help += " (" + strings.Join(o.Enum, ", ") + ")"
		}
		if len(o.Aliases) > 0 {
			help += "; also: " + strings.Join(o.Aliases, ", ")
		}
		if o.Secret {
			help += "; **secret**"
		}
		def := strings.ReplaceAll(o.Default, "|", `\|`)
		fmt.Fprintf(w, "| `drivers.%s.%s` | %s | `%s` | %s | %s |\n", name, o.Name, typ, def, live, help)
	}
	fmt.Fprintln(w)
	return nil
}

// packageDoc returns the package comment of the Go package in dir: the doc comment of
// the first non-test file that has one.
func packageDoc(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", name, err)
		}
		if f.Doc != nil {
			return f.Doc.Text(), nil
		}
	}
	return "", fmt.Errorf("%s has no package comment", dir)
}
