package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestWriteFileAtomic: an output gets the mode os.Create would give it (the user's umask,
// not CreateTemp's 0600: reports were unreadable to a team's other users), a replaced
// file keeps its mode, and a failed write leaves the old file whole and nothing behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	f, err := os.Create(probe)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	want, _ := os.Stat(probe)

	out := filepath.Join(dir, "r.json")
	if err := WriteFileAtomic(out, text("one")); err != nil {
		t.Fatal(err)
	}
	got, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("new output mode %v, want %v as os.Create gives", got.Mode().Perm(), want.Mode().Perm())
	}

	if runtime.GOOS != "windows" {
		if err := os.Chmod(out, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(out, text("two")); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o640 {
			t.Errorf("replaced output mode %v, want its old 0640", fi.Mode().Perm())
		}
	}

	boom := errors.New("boom")
	err = WriteFileAtomic(out, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), out) {
		t.Errorf("failed write: %v; want the cause and the path", err)
	}
	if b, _ := os.ReadFile(out); runtime.GOOS != "windows" && string(b) != "two" {
		t.Errorf("after a failed write the file holds %q, want the old %q", b, "two")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".ndbench-") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

// text writes s.
func text(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// TestWriteOutputsGoesOnAfterAFailure: an output that cannot be written is an error that
// names its option and path, and the outputs after it are still written, whole.
func TestWriteOutputsGoesOnAfterAFailure(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "gone", "r.json") // its directory does not exist
	outs := []Output{
		{Flag: "report", Path: bad, What: "JSON report", Write: text("{}")},
		{Flag: "report-html", Path: filepath.Join(dir, "r.html"), What: "HTML report", Write: text("<html>")},
		{Flag: "junit", Path: "", What: "JUnit XML", Write: text("never")},
		{Flag: "out-dir", Path: filepath.Join(dir, "junit.xml"), What: "JUnit XML", Write: text("<testsuites/>")},
	}
	var done []string
	err := WriteOutputs(outs, func(o Output) { done = append(done, o.Flag) })
	if err == nil || !strings.Contains(err.Error(), "--report: JSON report") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v; want one naming --report and %s", err, bad)
	}
	if strings.Join(done, ",") != "report-html,out-dir" {
		t.Errorf("written %v, want the outputs after the failure", done)
	}
	for name, want := range map[string]string{"r.html": "<html>", "junit.xml": "<testsuites/>"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
}
