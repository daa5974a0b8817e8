package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFileAtomic is how every output of a run reaches the disk (reports, JUnit,
// Markdown): write into a temporary file beside path, flush it to stable storage, give it
// the mode a new file of the user's would have, and rename it over path, then flush the
// directory. A reader (a CI step, a dashboard) never sees half a file, and a crash or a
// kill -9 leaves either the old file or the new one whole, never an empty or torn one.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := createTemp(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	fail := func(err error) error {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(tmp); err != nil {
		return fail(err)
	}
	// A replaced file keeps its mode (the temporary one has os.Create's: 0666 less the
	// umask).
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		if err := tmp.Chmod(fi.Mode().Perm()); err != nil && runtime.GOOS != "windows" {
			return fail(err)
		}
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// createTemp creates a new file in dir as os.Create would, so it gets the mode the user's
// umask gives (os.CreateTemp makes 0600 files, and a report is for sharing), under a
// random name that no other file has.
func createTemp(dir string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, fmt.Sprintf(".ndbench-%016x", rand.Uint64()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file in %s: every name tried exists", dir)
}

// syncDir flushes a directory's entries, so a rename survives a crash. Best effort:
// Windows cannot open a directory for it (its renames are journaled), and a file system
// that cannot sync a directory has nothing more to offer.
func syncDir(dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
