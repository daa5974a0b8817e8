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
	if err := WriteBytesAtomic(out, []byte("one")); err != nil {
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
		if err := WriteBytesAtomic(out, []byte("two")); err != nil {
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
