package source

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ndbench/ndbench/internal/config"
)

// fileDebounce is how long a watched file must stay quiet before it is re-read: editors and
// tools write a file in several steps (truncate, write, rename), and reading between them
// would apply a half-written file.
const fileDebounce = 100 * time.Millisecond

// File keeps the file layer of a config.Store in step with a config file (YAML, or NDBench
// .properties). Every change is applied whole or not at all: an invalid edit, or a file
// that is removed, leaves the last good configuration in effect and is reported.
type File struct {
	store *config.Store
	path  string
	state *sourceState

	watcher   *fsnotify.Watcher
	closeOnce sync.Once
	closeErr  error
}

// OpenFile starts watching path for store; changes are applied once Run runs, and
// edits made after OpenFile returns are not missed. It watches the file's directory,
// because editors and Kubernetes ConfigMaps replace a file by renaming another over it,
// which ends a watch on the file itself. onError (may be nil) hears about every rejected
// edit: the error names the key, the value and the source "file PATH".
func OpenFile(store *config.Store, path string, onError func(error)) (*File, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch config file %s: %w", path, err)
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch config file %s: %w", path, err)
	}
	return &File{store: store, path: path, state: newSourceState("file "+path, onError), watcher: w}, nil
}

// WatchFile keeps store's file layer in step with path until ctx ends (see File).
// The file layer should already be in the store from Load; the file is re-read once at
// start only to catch an edit made since.
func WatchFile(ctx context.Context, store *config.Store, path string, onError func(error)) error {
	f, err := OpenFile(store, path, onError)
	if err != nil {
		return err
	}
	return f.Run(ctx)
}

// Status returns what the source last did; safe to call at any time.
func (f *File) Status() Status { return f.state.status() }

// Close stops watching; Run does it on return, so only a caller that never runs the source
// needs it.
func (f *File) Close() error {
	f.closeOnce.Do(func() { f.closeErr = f.watcher.Close() })
	return f.closeErr
}

// Run applies changes to the file until ctx ends, then returns nil; it returns an error
// only when the watch itself fails. It re-reads the file once at start, so an edit made
// between Load and the watch is not lost (an unchanged file applies nothing).
func (f *File) Run(ctx context.Context) error {
	defer f.Close()
	f.reload()

	// The timer only runs while a change is pending.
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-f.watcher.Events:
			if !ok {
				return fmt.Errorf("watch config file %s: watcher closed", f.path)
			}
			// Any change in the directory may be the file: a ConfigMap update renames a
			// hidden directory, not the file. Re-reading an unchanged file applies nothing.
			if ev.Op == fsnotify.Chmod {
				continue
			}
			debounce.Reset(fileDebounce)
		case err, ok := <-f.watcher.Errors:
			if !ok {
				return fmt.Errorf("watch config file %s: watcher closed", f.path)
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: the file may have changed unseen.
				debounce.Reset(fileDebounce)
				continue
			}
			f.state.failed(fmt.Errorf("watch config file %s: %w", f.path, err))
		case <-debounce.C:
			f.reload()
		}
	}
}

// reload re-reads the file and applies it, or records why it could not.
func (f *File) reload() {
	l, fes, err := FileLayer(f.path)
	if err == nil && len(fes) > 0 {
		err = fes
	}
	if err != nil {
		f.state.failed(fmt.Errorf("config file %s not applied, the last good configuration stays: %w", f.path, err))
		return
	}
	snap, err := f.store.SetLayerIfChanged(l)
	if err != nil {
		f.state.failed(fmt.Errorf("config file %s not applied, the last good configuration stays: %w", f.path, err))
		return
	}
	f.state.applied(snap, 0)
}
