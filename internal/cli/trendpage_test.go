package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/history"
)

// The trend page replaces an older one by a rename of a whole new file, never by
// rewriting the old one in place: a second name of the old file (a dashboard's hard link,
// a reader that has it open) keeps the old page whole, and no temporary file is left.
// Written in place (os.Create), the old page was truncated under its readers.
func TestTrendPageIsWrittenAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trend.html")
	if err := os.WriteFile(path, []byte("the old page"), 0o644); err != nil {
		t.Fatal(err)
	}
	served := filepath.Join(dir, "served.html")
	if err := os.Link(path, served); err != nil {
		t.Fatal(err)
	}
	page := history.TrendPage{Figure: history.Figure{Series: "read", Metric: "p99"}, Filter: "store=redis",
		Points: []history.Point{{RunID: 1, Started: time.Unix(1_800_000_000, 0), Value: 1.5}, {RunID: 2, Started: time.Unix(1_800_000_600, 0), Value: 1.6}}}
	if err := writeTrendHTML(path, page); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(served); string(b) != "the old page" {
		t.Errorf("the old page's other name reads %.80q after the write; want the old page whole", b)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "</html>") {
		t.Errorf("the new page is not whole: %.200q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files beside the page: %v; want the page and its old name only", names)
	}
}
