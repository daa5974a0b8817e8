// Package pebble is the default ndbench driver: an embedded Pebble (CockroachDB's LSM
// key-value store) in a local directory, so `ndbench run` works on a fresh machine with no
// server to install. Without a path it uses a temporary directory that is removed at Close.
package pebble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ndbench/ndbench/driver"
)

// Name is the name the driver is registered under.
const Name = "pebble"

func init() {
	driver.MustRegister(driver.Definition{
		Name:       Name,
		Summary:    "embedded Pebble LSM store in a local directory (default; no server needed)",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return New() },
		InProcess:  true,
	})
}

// Options configure the pebble driver. None can change while it runs: each is fixed when
// the database is opened.
type Options struct {
	Path         string `opt:"path" default:"" reach:"path" help:"database directory, kept after the run; empty = a temporary directory removed at Close"`
	Sync         bool   `opt:"sync" default:"false" help:"fsync the write-ahead log on every write (durable across power loss, much slower)"`
	CacheSize    int64  `opt:"cacheSize" default:"67108864" min:"0" max:"1099511627776" help:"block cache size in bytes (default 64 MiB)"`
	MemTableSize int64  `opt:"memTableSize" default:"67108864" min:"1048576" max:"2147483648" help:"memtable size in bytes (default 64 MiB); larger means fewer flushes and L0 files"`
	DisableWAL   bool   `opt:"disableWAL" default:"false" help:"skip the write-ahead log (faster writes; unflushed writes are lost on a crash)"`
}

// errClosed is returned by operations on a driver that is not open. Pebble itself panics
// on a closed database, so the driver checks first.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("pebble: driver is not open"))

// Driver is the pebble driver. Create it with New (or through the registry); it is safe for
// concurrent use once Init has returned.
type Driver struct {
	// mu guards db against Close: operations hold it shared, Close exclusively, so no
	// operation ever reaches a closed pebble.DB (which would panic).
	mu        sync.RWMutex
	db        *pebble.DB
	dir       string
	temporary bool
	opts      Options
	write     *pebble.WriteOptions

	writeStalls    atomic.Int64
	stallStart     atomic.Int64 // unix ns of the stall in progress, 0 if none
	writeStallTime atomic.Int64 // ns
	bgErrors       atomic.Int64
}

// New returns an uninitialised pebble driver.
func New() *Driver { return &Driver{} }

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.BulkReader       = (*Driver)(nil)
	_ driver.BulkWriter       = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
	_ driver.StatsReporter    = (*Driver)(nil)
	_ driver.Deleter          = (*Driver)(nil)
	_ driver.Scanner          = (*Driver)(nil)
)

// Init opens (or creates) the database.
func (d *Driver) Init(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return fmt.Errorf("init pebble driver: %w", err)
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("init pebble driver: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db != nil {
		return errors.New("init pebble driver: already initialised")
	}
	dir, temporary := o.Path, o.Path == ""
	if temporary {
		if dir, err = os.MkdirTemp("", "ndbench-pebble-"); err != nil {
			return fmt.Errorf("create temporary directory for pebble: %w", err)
		}
	}
	cache := pebble.NewCache(o.CacheSize)
	// The database takes its own reference to the cache; ours is no longer needed.
	defer cache.Unref()
	logger := &errorLogger{w: os.Stderr}
	po := &pebble.Options{
		Cache:        cache,
		MemTableSize: uint64(o.MemTableSize),
		DisableWAL:   o.DisableWAL,
		Logger:       logger,
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) {
				d.bgErrors.Add(1)
				logger.Errorf("background error: %v", err)
			},
			WriteStallBegin: func(pebble.WriteStallBeginInfo) {
				d.writeStalls.Add(1)
				d.stallStart.Store(time.Now().UnixNano())
			},
			WriteStallEnd: func() {
				if start := d.stallStart.Swap(0); start != 0 {
					d.writeStallTime.Add(time.Now().UnixNano() - start)
				}
			},
		},
	}
	if temporary || isEmptyDir(dir) {
		// A new database gets the newest on-disk format (pebble would pick its oldest);
		// an existing one keeps its format, so other tools can still open it.
		po.FormatMajorVersion = pebble.FormatNewest
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		if temporary {
			_ = os.RemoveAll(dir)
		}
		return fmt.Errorf("open pebble at %s: %w", dir, err)
	}
	d.db, d.dir, d.temporary, d.opts = db, dir, temporary, *o
	d.write = pebble.NoSync
	if o.Sync {
		d.write = pebble.Sync
	}
	return nil
}

// isEmptyDir reports whether dir is missing or has no entries.
func isEmptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0)
}

// Validate checks what the tags cannot (sync needs the log that disableWAL removes);
// driver.NewOptions calls it, so the config store rejects such options up front.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	if o.CacheSize < 0 {
		errs = append(errs, &driver.FieldError{Field: "cacheSize", Value: strconv.FormatInt(o.CacheSize, 10), Allowed: "a non-negative number of bytes"})
	}
	if o.MemTableSize < 1<<20 || o.MemTableSize > 2<<30 {
		errs = append(errs, &driver.FieldError{Field: "memTableSize", Value: strconv.FormatInt(o.MemTableSize, 10), Allowed: "bytes from 1048576 (1 MiB) to 2147483648 (2 GiB)"})
	}
	if o.Sync && o.DisableWAL {
		errs = append(errs, &driver.FieldError{Field: "sync", Value: "true", Allowed: "false when disableWAL is true (there is no log to sync)"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Close flushes the memtable (so a kept database reopens without replaying the log),
// closes the database and removes a temporary directory. Later operations fail with an
// unavailable error.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil
	}
	var errs []error
	if !d.temporary {
		if err := d.db.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("flush pebble at %s: %w", d.dir, err))
		}
	}
	if err := d.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close pebble at %s: %w", d.dir, err))
	}
	d.db = nil
	if d.temporary {
		if err := os.RemoveAll(d.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove temporary pebble directory %s: %w", d.dir, err))
		}
	}
	return errors.Join(errs...)
}

// keyBytes views key as bytes without copying. Pebble only reads keys (Set copies them into
// its batch), so the string's immutability is respected.
func keyBytes(key string) []byte {
	return unsafe.Slice(unsafe.StringData(key), len(key))
}

// Read returns a copy of the stored value (pebble's own slice is only valid until its
// closer is closed), or driver.ErrNotFound.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebble read: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return nil, errClosed
	}
	return d.get(key)
}

func (d *Driver) get(key string) ([]byte, error) {
	v, closer, err := d.db.Get(keyBytes(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, driver.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pebble get: %w", err)
	}
	out := make([]byte, len(v)) // never nil, so an empty value is not a miss in ReadBulk
	copy(out, v)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("pebble get: release value: %w", err)
	}
	return out, nil
}

// Write stores value under key; pebble copies it, so the caller may reuse the buffer.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble write: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return errClosed
	}
	if err := d.db.Set(keyBytes(key), value, d.write); err != nil {
		return fmt.Errorf("pebble set: %w", err)
	}
	return nil
}

// Delete removes key (a tombstone in the LSM tree); a missing key is not an error.
func (d *Driver) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble delete: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return errClosed
	}
	if err := d.db.Delete(keyBytes(key), d.write); err != nil {
		return fmt.Errorf("pebble delete: %w", err)
	}
	return nil
}

// Scan reads up to n keys and their values in key order from start with an iterator, as
// a range query does: the values are read (their blocks loaded), not only the keys.
func (d *Driver) Scan(ctx context.Context, start string, n int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("pebble scan: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return 0, errClosed
	}
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: keyBytes(start)})
	if err != nil {
		return 0, fmt.Errorf("pebble scan: %w", err)
	}
	read := 0
	for ok := it.First(); ok && read < n; ok = it.Next() {
		if _, err := it.ValueAndErr(); err != nil {
			_ = it.Close()
			return read, fmt.Errorf("pebble scan: value %d: %w", read, err)
		}
		read++
	}
	if err := it.Close(); err != nil {
		return read, fmt.Errorf("pebble scan: %w", err)
	}
	if read == 0 {
		return 0, driver.ErrNotFound
	}
	return read, nil
}

// ReadBulk reads the keys one by one (an embedded store has no round trip to save), with a
// nil value for each missing key.
func (d *Driver) ReadBulk(ctx context.Context, keys []string) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebble bulk read: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return nil, errClosed
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := d.get(k)
		if errors.Is(err, driver.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pebble bulk read of %d keys: %w", len(keys), err)
		}
		out[i] = v
	}
	return out, nil
}

// WriteBulk commits all pairs in one batch: one log write (and one fsync with sync) for
// the lot, applied atomically.
func (d *Driver) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return driver.Wrap(driver.ClassRejected,
			fmt.Errorf("pebble: bulk write of %d keys with %d values", len(keys), len(values)))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble bulk write: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return errClosed
	}
	b := d.db.NewBatch()
	defer b.Close()
	for i, k := range keys {
		if err := b.Set(keyBytes(k), values[i], nil); err != nil {
			return fmt.Errorf("pebble bulk write: add key %d to batch: %w", i, err)
		}
	}
	if err := b.Commit(d.write); err != nil {
		return fmt.Errorf("pebble bulk write of %d keys: %w", len(keys), err)
	}
	return nil
}

// ConnectionInfo describes the database: where it is, its format and its size on disk.
func (d *Driver) ConnectionInfo() map[string]string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return map[string]string{"state": "closed"}
	}
	m := d.db.Metrics()
	return map[string]string{
		"state":          "open",
		"path":           d.dir,
		"temporary":      strconv.FormatBool(d.temporary),
		"formatVersion":  d.db.FormatMajorVersion().String(),
		"diskUsageBytes": strconv.FormatUint(m.DiskSpaceUsage(), 10),
		"sync":           strconv.FormatBool(d.opts.Sync),
		"wal":            strconv.FormatBool(!d.opts.DisableWAL),
		"cacheSize":      strconv.FormatInt(d.opts.CacheSize, 10),
		"memTableSize":   strconv.FormatInt(d.opts.MemTableSize, 10),
	}
}

// DriverStats reports the pebble metrics that explain latency: compactions and flushes,
// L0 shape (read amplification), block cache effectiveness and write stalls.
func (d *Driver) DriverStats() map[string]int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return map[string]int64{}
	}
	m := d.db.Metrics()
	hits, misses := m.BlockCache.Hits, m.BlockCache.Misses
	hitPct := int64(0)
	if hits+misses > 0 {
		hitPct = hits * 100 / (hits + misses)
	}
	return map[string]int64{
		"compactions":          m.Compact.Count,
		"compactionDebtBytes":  int64(m.Compact.EstimatedDebt),
		"flushes":              m.Flush.Count,
		"l0Files":              m.Levels[0].TablesCount,
		"l0Sublevels":          int64(m.Levels[0].Sublevels),
		"readAmp":              int64(m.ReadAmp()),
		"blockCacheHits":       hits,
		"blockCacheMisses":     misses,
		"blockCacheHitPercent": hitPct,
		"writeStalls":          d.writeStalls.Load(),
		"writeStallMillis":     d.writeStallTime.Load() / int64(time.Millisecond),
		"backgroundErrors":     d.bgErrors.Load(),
		"diskUsageBytes":       int64(m.DiskSpaceUsage()),
		"memTableBytes":        int64(m.MemTable.Size),
	}
}

// errorLogger keeps pebble quiet on the terminal: its informational messages (every flush,
// compaction and WAL event) would drown ndbench's progress display, so only errors are
// written.
type errorLogger struct {
	mu sync.Mutex
	w  io.Writer
}

// Infof drops informational messages.
func (l *errorLogger) Infof(string, ...any) {}

// Errorf writes the message, prefixed so its origin is clear.
func (l *errorLogger) Errorf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "pebble: "+format+"\n", args...)
}

// Fatalf writes the message and exits, as pebble's own logger does: pebble calls it only
// for unrecoverable corruption and does not expect it to return.
func (l *errorLogger) Fatalf(format string, args ...any) {
	l.Errorf(format, args...)
	os.Exit(1)
}
