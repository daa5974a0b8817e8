// Package memory is an in-process key-value store that doubles as a simulated store for
// testing ndbench itself. With every simulation option off it is a sharded map fast enough
// that a benchmark of the engine measures the engine, not the store. With them on it
// behaves like a server with a service time, a throughput capacity (requests queue FIFO
// above it), periodic stalls (GC pauses, compactions) and injected errors, so latency
// accounting, coordinated-omission correction, auto-tune and error handling can be checked
// against a store whose behaviour is known exactly.
//
// Stored values are immutable: Write copies the value into its shard's arena, appended
// after the records before it, and Read returns a slice of the arena itself. Overwriting
// the stored bytes in place would change a slice that an earlier Read handed out, so every
// Read would have to copy instead; reads outnumber writes in most workloads and the
// engine's read path is meant to be allocation-free. The arena holds no Go pointers per
// key (arena.go), so the collector's marking does not grow with the keys stored.
//
// The stored data is bounded by maxBytes, counting keys, values and a fixed per-entry
// overhead: the store lives in ndbench's own heap, so without a bound a workload of large
// values (dataSize=67108864 at a few writes per second) would run the whole process, and
// with it `ndbench serve`, out of memory within seconds. A write that would pass the bound
// fails with a rejected error naming the option; overwrites that do not grow the data, and
// all reads, keep working. The default is a fixed 1 GiB rather than a fraction of physical
// memory: it is the same on every platform and on every node of a fleet, so runs compare,
// and a container's memory limit is often far below the machine's memory, which a fraction
// of it would ignore. Go's collector lets the heap reach about twice the live data, so 1 GiB
// stored keeps ndbench near 2 GiB; raise it, or set 0 (unlimited), on a bigger machine.
package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ndbench/ndbench/driver"
)

// Name is the name the driver is registered under.
const Name = "memory"

func init() {
	driver.MustRegister(driver.Definition{
		Name:       Name,
		Summary:    "in-process sharded map; optionally simulates service time, capacity, stalls and errors",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return New() },
		InProcess:  true,
	})
}

// Options configure the memory driver. Everything but shards can change while it runs.
type Options struct {
	Shards         int           `opt:"shards" default:"64" min:"1" max:"65536" help:"number of independently locked map shards (more shards, less lock contention)"`
	ServiceTime    time.Duration `opt:"serviceTime" default:"0s" min:"0s" max:"1m" live:"true" help:"simulated service time added to every operation"`
	ServiceTimeMax time.Duration `opt:"serviceTimeMax" default:"0s" min:"0s" max:"1m" live:"true" help:"when above serviceTime, each operation's service time is uniform in [serviceTime, serviceTimeMax]"`
	Capacity       float64       `opt:"capacity" default:"0" min:"0" max:"1000000000" live:"true" help:"simulated throughput limit in ops/s (0 = unlimited); above it operations queue FIFO like a single server"`
	StallEvery     time.Duration `opt:"stallEvery" default:"0s" min:"0s" max:"24h" live:"true" help:"period of simulated stalls (GC pauses, compactions), counted from Init; each period ends with a stall of stallFor; 0 = no stalls"`
	StallFor       time.Duration `opt:"stallFor" default:"0s" min:"0s" max:"1h" live:"true" help:"length of each stall; operations arriving during one wait until it ends; >= stallEvery hangs the store"`
	ErrorRatio     float64       `opt:"errorRatio" default:"0" min:"0" max:"1" live:"true" help:"fraction of operations that fail with errorClass (0..1)"`
	ErrorClass     string        `opt:"errorClass" default:"unavailable" enum:"timeout,unavailable,throttled,rejected,other" live:"true" help:"failure class of injected errors"`
	MaxBytes       int64         `opt:"maxBytes" default:"1073741824" min:"0" max:"1099511627776" live:"true" help:"limit on the stored data in bytes (keys + values + 96 per entry); a write that would pass it fails as rejected, while reads and overwrites that do not grow the data still work; 0 = unlimited. Default 1 GiB (4.5M keys of 128-byte values): Go's heap grows to about twice the live data, so ndbench stays near 2 GiB rather than running out of memory"`
}

// errInjected is the cause of every injected failure, so tests and users can tell a
// simulated failure from a real one.
var errInjected = errors.New("memory: injected failure")

// errClosed is returned by operations on a driver that is not open.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("memory: driver is not open"))

// errFull is the cause of every write refused by maxBytes.
var errFull = errors.New("memory: store full")

// entryOverhead is what one entry costs beyond its key and value bytes, as maxBytes counts
// it. It is an estimate of the heap, fixed so that the limit is exact and the same on every
// platform. The table's slot was 48 bytes (a hash, a string header and a slice header) at
// 3/8 to 3/4 full, 64 to 128 bytes per entry, and 96 the middle. It is 17 bytes now (a
// control byte and an entry of hash and arena offset), 23 to 45 bytes per entry, and the
// arena's record adds a 16-byte header and up to 7 bytes of padding to the key and value;
// the arena keeps up to about as many dead bytes as live ones until it compacts (arena.go),
// as the collector lets the heap reach about twice the live data. The count stays 96, so a
// maxBytes that fitted a workload still fits it. With a Go map and an entry object it was
// ~60 bytes, counted as 64.
const entryOverhead = 96

// entryCost is what an entry of key and value counts against maxBytes.
func entryCost(key string, value []byte) int64 {
	return int64(len(key)) + int64(len(value)) + entryOverhead
}

// settings is an immutable snapshot of the live options. The hot path loads it once per
// operation through an atomic pointer, so Reconfigure never blocks traffic.
type settings struct {
	// slow is true when anything beyond a map access is needed: a simulation option is on
	// or the driver is closed. With it false an operation does nothing extra.
	slow   bool
	closed bool

	serviceMin  int64 // ns
	serviceSpan int64 // ns; 0 = fixed service time
	slot        int64 // ns per op at capacity; 0 = unlimited
	stallEvery  int64 // ns
	stallFor    int64 // ns
	errorRatio  float64
	injected    error // prebuilt so a failure does not allocate
	maxBytes    int64 // 0 = unlimited

	opts Options
}

// shard is one independently locked part of the map, a cache line long so that
// neighbouring shards' locks do not share one (TestShardIsACacheLine); the lock and the
// table's directory share it, so a lookup's first load after the lock hits the cache.
type shard struct {
	mu sync.RWMutex
	// The padding goes between the fields: a zero-length array at the end of a struct
	// still takes space.
	_ [(64 - (unsafe.Sizeof(sync.RWMutex{})+unsafe.Sizeof(table{}))%64) % 64]byte
	t table // empty (!t.open()) once the driver is closed
}

// Driver is the memory driver. Create it with New (or through the registry); it is safe for
// concurrent use once Init has returned.
type Driver struct {
	// Read on every operation and written only by Init, Reconfigure and Close.
	cur    atomic.Pointer[settings]
	shards []shard
	nshard uint64
	seed   maphash.Seed
	epoch  time.Time // stalls are scheduled from here; all simulated times are ns since it
	_      [64]byte

	// nextFree is the start of the next free service slot when capacity is limited. It is
	// CAS-ed by every operation then, so it sits apart from the read-mostly fields above.
	nextFree atomic.Int64
	_        [56]byte

	// stored is the data's size as maxBytes counts it (entryCost summed over the entries).
	// A write changes it while it holds its shard's lock, so it always equals the data
	// exactly. Only writes that change the size touch it (inserts, overwrites with a value
	// of another length); overwrites of the same length, the steady state of a fixed
	// dataSize, only read it, so it keeps a cache line of its own.
	stored atomic.Int64
	_      [56]byte

	stalledOps     atomic.Int64
	queuedOps      atomic.Int64
	delayedOps     atomic.Int64
	injectedErrors atomic.Int64
	cancelledWaits atomic.Int64
	rejectedWrites atomic.Int64
	kernelSleepers atomic.Int32

	cfgMu sync.Mutex // serialises Init, Reconfigure and Close
}

// New returns an uninitialised memory driver.
func New() *Driver { return &Driver{} }

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.BulkReader       = (*Driver)(nil)
	_ driver.BulkWriter       = (*Driver)(nil)
	_ driver.Reconfigurer     = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
	_ driver.StatsReporter    = (*Driver)(nil)
	_ driver.Deleter          = (*Driver)(nil)
	_ driver.Scanner          = (*Driver)(nil)
)

// Init creates the shards and applies the options.
func (d *Driver) Init(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return fmt.Errorf("init memory driver: %w", err)
	}
	s, err := newSettings(*o)
	if err != nil {
		return fmt.Errorf("init memory driver: %w", err)
	}
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	if d.cur.Load() != nil {
		return errors.New("init memory driver: already initialised")
	}
	d.shards = make([]shard, o.Shards)
	for i := range d.shards {
		d.shards[i].t = newTable()
	}
	d.nshard = uint64(o.Shards)
	d.seed = maphash.MakeSeed()
	d.epoch = time.Now()
	d.cur.Store(s)
	return nil
}

// Reconfigure applies new live options without touching the stored data. Operations
// already waiting keep the wait they were given; new ones see the new settings.
func (d *Driver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return fmt.Errorf("reconfigure memory driver: %w", err)
	}
	s, err := newSettings(*o)
	if err != nil {
		return fmt.Errorf("reconfigure memory driver: %w", err)
	}
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	old := d.cur.Load()
	if old == nil || old.closed {
		return fmt.Errorf("reconfigure memory driver: %w", errClosed)
	}
	if o.Shards != old.opts.Shards {
		return fmt.Errorf("reconfigure memory driver: %w", &driver.FieldError{
			Field: "shards", Value: strconv.Itoa(o.Shards),
			Allowed: strconv.Itoa(old.opts.Shards) + " (shards cannot change while the driver is open)"})
	}
	if s.slot != old.slot {
		// The new capacity applies to operations arriving from now on, rather than after
		// the backlog reserved at the old rate has drained.
		d.nextFree.Store(0)
	}
	d.cur.Store(s)
	return nil
}

// Close drops the data. Operations after Close fail with an unavailable error.
func (d *Driver) Close() error {
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	old := d.cur.Load()
	if old == nil || old.closed {
		d.cur.Store(&settings{slow: true, closed: true})
		return nil
	}
	closed := *old
	closed.slow, closed.closed = true, true
	d.cur.Store(&closed)
	for i := range d.shards {
		sh := &d.shards[i]
		sh.mu.Lock()
		sh.t = table{}
		sh.mu.Unlock()
	}
	// Every shard is nil now, so no write can change stored any more.
	d.stored.Store(0)
	return nil
}

// newSettings validates o and precomputes what the hot path needs.
func newSettings(o Options) (*settings, error) {
	var errs driver.FieldErrors
	bad := func(field, value, allowed string) {
		errs = append(errs, &driver.FieldError{Field: field, Value: value, Allowed: allowed})
	}
	if o.Shards < 1 || o.Shards > 65536 {
		bad("shards", strconv.Itoa(o.Shards), "an integer from 1 to 65536")
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"serviceTime", o.ServiceTime}, {"serviceTimeMax", o.ServiceTimeMax}, {"stallEvery", o.StallEvery}, {"stallFor", o.StallFor}} {
		if f.d < 0 {
			bad(f.name, f.d.String(), "a duration >= 0s")
		}
	}
	if math.IsNaN(o.Capacity) || math.IsInf(o.Capacity, 0) || o.Capacity < 0 {
		bad("capacity", strconv.FormatFloat(o.Capacity, 'g', -1, 64), "a number >= 0")
	}
	if !(o.ErrorRatio >= 0 && o.ErrorRatio <= 1) {
		bad("errorRatio", strconv.FormatFloat(o.ErrorRatio, 'g', -1, 64), "a number from 0 to 1")
	}
	class, ok := classByName(o.ErrorClass)
	if !ok {
		bad("errorClass", o.ErrorClass, "timeout, unavailable, throttled, rejected, other")
	}
	if o.MaxBytes < 0 {
		bad("maxBytes", strconv.FormatInt(o.MaxBytes, 10), "a number of bytes >= 0 (0 = unlimited)")
	}
	if len(errs) > 0 {
		return nil, errs
	}
	s := &settings{
		serviceMin: int64(o.ServiceTime),
		errorRatio: o.ErrorRatio,
		injected:   driver.Wrap(class, errInjected),
		maxBytes:   o.MaxBytes,
		opts:       o,
	}
	if o.ServiceTimeMax > o.ServiceTime {
		s.serviceSpan = int64(o.ServiceTimeMax - o.ServiceTime)
	}
	if o.Capacity > 0 {
		s.slot = max(1, int64(math.Round(float64(time.Second)/o.Capacity)))
	}
	if o.StallEvery > 0 && o.StallFor > 0 {
		s.stallEvery, s.stallFor = int64(o.StallEvery), int64(o.StallFor)
	}
	s.slow = s.serviceMin > 0 || s.serviceSpan > 0 || s.slot > 0 || s.stallEvery > 0 || s.errorRatio > 0
	return s, nil
}

func classByName(name string) (driver.Class, bool) {
	for _, c := range driver.Classes {
		if c.String() == name {
			return c, true
		}
	}
	return driver.ClassOther, false
}

// shardFor returns the shard of key and the key's hash. The shard comes from the hash's
// high 32 bits and a table slot from its low bits, so the keys of one shard still spread
// over its table.
func (d *Driver) shardFor(key string) (*shard, uint64) {
	h := maphash.String(d.seed, key)
	// Multiply-shift maps the hash onto [0, n) without a division.
	return &d.shards[((h>>32)*d.nshard)>>32], h
}

// Read returns the stored value itself (values are immutable once stored; see the package
// comment), or driver.ErrNotFound.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	if s := d.cur.Load(); s == nil || s.slow {
		if err := d.simulate(ctx, s); err != nil {
			return nil, err
		}
	} else if err := ctx.Err(); err != nil {
		return nil, cancelled(err)
	}
	sh, h := d.shardFor(key)
	sh.mu.RLock()
	if !sh.t.open() {
		sh.mu.RUnlock()
		return nil, errClosed
	}
	v, ok := sh.t.read(h, key)
	sh.mu.RUnlock()
	if !ok {
		return nil, driver.ErrNotFound
	}
	return v, nil
}

// Delete removes key; a missing key is not an error. A composition in front of a database
// uses it to invalidate on writes.
func (d *Driver) Delete(ctx context.Context, key string) error {
	if s := d.cur.Load(); s == nil || s.slow {
		if err := d.simulate(ctx, s); err != nil {
			return err
		}
	} else if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	sh, h := d.shardFor(key)
	sh.mu.Lock()
	if !sh.t.open() {
		sh.mu.Unlock()
		return errClosed
	}
	if v, ok := sh.t.remove(h, key); ok {
		d.stored.Add(-entryCost(key, v))
	}
	sh.mu.Unlock()
	return nil
}

// Scan reads up to n keys in byte order from start. The store is hashed, not sorted, so a
// scan visits every key (O(keys) under each shard's read lock): it serves workloads that
// need a range operation (YCSB E) with the right answers, not a sorted store's speed.
func (d *Driver) Scan(ctx context.Context, start string, n int) (int, error) {
	if s := d.cur.Load(); s == nil || s.slow {
		if err := d.simulate(ctx, s); err != nil {
			return 0, err
		}
	} else if err := ctx.Err(); err != nil {
		return 0, cancelled(err)
	}
	if n <= 0 {
		return 0, driver.ErrNotFound
	}
	// The n smallest keys at or after start, kept as a max-heap on the largest.
	var first []string
	for i := range d.shards {
		sh := &d.shards[i]
		sh.mu.RLock()
		if !sh.t.open() {
			sh.mu.RUnlock()
			return 0, errClosed
		}
		sh.t.each(func(key string, _ []byte) {
			switch {
			case key < start:
			case len(first) < n:
				first = append(first, key)
				siftUp(first, len(first)-1)
			case key < first[0]:
				first[0] = key
				siftDown(first, 0)
			}
		})
		sh.mu.RUnlock()
	}
	if len(first) == 0 {
		return 0, driver.ErrNotFound
	}
	return len(first), nil
}

// siftUp and siftDown keep h a max-heap of strings.
func siftUp(h []string, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p] >= h[i] {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []string, i int) {
	for {
		l, big := 2*i+1, i
		if l < len(h) && h[l] > h[big] {
			big = l
		}
		if r := l + 1; r < len(h) && h[r] > h[big] {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// Write stores a copy of value under key. It fails with a rejected error when the data
// would grow past maxBytes.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	s := d.cur.Load()
	if s == nil || s.slow {
		if err := d.simulate(ctx, s); err != nil {
			return err
		}
	} else if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	// put, written out: as a call it cost Write 45 more instructions per op (callgrind).
	if s.maxBytes > 0 && d.stored.Load()+entryCost(key, value) > s.maxBytes {
		if err := d.refuse(s.maxBytes, key, value); err != nil {
			return err
		}
	}
	return d.store(s.maxBytes, key, value)
}

// put stores a copy of value under key within limit (0 = unlimited). When the write could
// pass the limit (the data plus a whole new entry would), refuse checks first under the
// shard's read lock, so a refused 64 MiB value is never copied. store decides for good.
func (d *Driver) put(limit int64, key string, value []byte) error {
	if limit > 0 && d.stored.Load()+entryCost(key, value) > limit {
		if err := d.refuse(limit, key, value); err != nil {
			return err
		}
	}
	return d.store(limit, key, value)
}

// refuse returns the rejected error of a write of value under key that would take the data
// past limit, or nil when it would not (an overwrite that does not grow the data enough).
func (d *Driver) refuse(limit int64, key string, value []byte) error {
	sh, h := d.shardFor(key)
	sh.mu.RLock()
	grow := entryCost(key, value)
	if sh.t.open() {
		if e := sh.t.get(h, key); e != nil {
			grow = int64(len(value)) - int64(sh.t.valueLen(e))
		}
	}
	sh.mu.RUnlock()
	if stored := d.stored.Load(); grow > 0 && stored+grow > limit {
		return d.full(limit, stored, grow)
	}
	return nil
}

// cancelled is the error of an operation whose context was done before it started: a
// store that is called with a dead context does not do the work.
func cancelled(err error) error { return fmt.Errorf("memory: operation not started: %w", err) }

// store puts a copy of v under key if the data stays within limit (0 = unlimited). The
// copy goes into the shard's arena (arena.go), so v may be the caller's buffer, which the
// engine reuses.
func (d *Driver) store(limit int64, key string, v []byte) error {
	if uint64(len(key)) > maxKeyLen || uint64(len(v)) > maxValueLen {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf(
			"memory: a key of %d bytes and a value of %d bytes: the store holds keys of at most %d bytes and values of at most %d",
			len(key), len(v), maxKeyLen, uint64(maxValueLen)))
	}
	sh, h := d.shardFor(key)
	sh.mu.Lock()
	if !sh.t.open() {
		sh.mu.Unlock()
		return errClosed
	}
	if e := sh.t.get(h, key); e != nil {
		// An overwrite of the same length, the common case, leaves stored alone.
		if grow := int64(len(v)) - int64(sh.t.valueLen(e)); grow != 0 {
			if stored, ok := d.account(limit, grow); !ok {
				sh.mu.Unlock()
				return d.full(limit, stored, grow)
			}
		}
		sh.t.set(e, key, v)
	} else {
		grow := entryCost(key, v)
		if stored, ok := d.account(limit, grow); !ok {
			sh.mu.Unlock()
			return d.full(limit, stored, grow)
		}
		sh.t.add(h, key, v)
	}
	sh.mu.Unlock()
	return nil
}

// account adds grow to stored, unless grow is positive and would take stored past limit
// (0 = unlimited); then it returns false and the stored size it saw. The caller holds the
// lock of the shard that changes. A compare-and-swap, not an add and an undo, so that
// writes racing near the limit never make each other fail when only one passes it.
func (d *Driver) account(limit, grow int64) (int64, bool) {
	if grow < 0 || limit == 0 {
		d.stored.Add(grow)
		return 0, true
	}
	for {
		cur := d.stored.Load()
		if cur+grow > limit {
			return cur, false
		}
		if d.stored.CompareAndSwap(cur, cur+grow) {
			return 0, true
		}
	}
}

// full counts a write refused by maxBytes and returns its rejected error, which names the
// option and the limit so the user knows what to raise.
func (d *Driver) full(limit, stored, grow int64) error {
	d.rejectedWrites.Add(1)
	return driver.Wrap(driver.ClassRejected, fmt.Errorf(
		"%w: the write adds %d bytes to the %d stored, past maxBytes=%d (option drivers.memory.maxBytes; raise it, or 0 = unlimited)",
		errFull, grow, stored, limit))
}

// ReadBulk reads every key in one simulated round trip: the simulation (service time,
// queueing, stalls, errors) applies once per call, not per key.
func (d *Driver) ReadBulk(ctx context.Context, keys []string) ([][]byte, error) {
	if s := d.cur.Load(); s == nil || s.slow {
		if err := d.simulate(ctx, s); err != nil {
			return nil, err
		}
	} else if err := ctx.Err(); err != nil {
		return nil, cancelled(err)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		sh, h := d.shardFor(k)
		sh.mu.RLock()
		if !sh.t.open() {
			sh.mu.RUnlock()
			return nil, errClosed
		}
		out[i], _ = sh.t.read(h, k)
		sh.mu.RUnlock()
	}
	return out, nil
}

// WriteBulk writes every pair in one simulated round trip, like ReadBulk; it stops at the
// first pair that maxBytes refuses.
func (d *Driver) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return driver.Wrap(driver.ClassRejected,
			fmt.Errorf("memory: bulk write of %d keys with %d values", len(keys), len(values)))
	}
	s := d.cur.Load()
	if s == nil || s.slow {
		if err := d.simulate(ctx, s); err != nil {
			return err
		}
	} else if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	// Pairs before one refused by maxBytes stay written, as with a store that applies a
	// batch in order.
	for i, k := range keys {
		if err := d.put(s.maxBytes, k, values[i]); err != nil {
			return err
		}
	}
	return nil
}

// now is the time since Init in ns, on the monotonic clock.
func (d *Driver) now() int64 { return int64(time.Since(d.epoch)) }

// simulate applies the simulation settings in the order a request meets them at a server:
// a stall in progress holds it at the door, then it queues for a service slot, then it is
// served, and finally it may fail.
func (d *Driver) simulate(ctx context.Context, s *settings) error {
	if s == nil || s.closed {
		return errClosed
	}
	if s.stallEvery > 0 {
		// Each period of stallEvery ends with a stall of stallFor, so any run of whole
		// periods is stalled exactly stallFor/stallEvery of the time. A stall as long as
		// the period never ends: the store hangs.
		now := d.now()
		end := (now/s.stallEvery + 1) * s.stallEvery
		hang := s.stallFor >= s.stallEvery
		if hang {
			end = math.MaxInt64
		}
		if hang || now >= end-s.stallFor {
			d.stalledOps.Add(1)
			if err := d.waitUntil(ctx, end, "stall"); err != nil {
				return err
			}
		}
	}
	if s.slot > 0 {
		for {
			free := d.nextFree.Load()
			now := d.now()
			start := max(now, free)
			if d.nextFree.CompareAndSwap(free, start+s.slot) {
				if start > now {
					d.queuedOps.Add(1)
					if err := d.waitUntil(ctx, start, "queueing for capacity"); err != nil {
						return err
					}
				}
				break
			}
		}
	}
	if s.serviceMin > 0 || s.serviceSpan > 0 {
		service := s.serviceMin
		if s.serviceSpan > 0 {
			service += rand.Int64N(s.serviceSpan + 1)
		}
		d.delayedOps.Add(1)
		if err := d.waitUntil(ctx, d.now()+service, "service time"); err != nil {
			return err
		}
	}
	if s.errorRatio > 0 && rand.Float64() < s.errorRatio {
		d.injectedErrors.Add(1)
		return s.injected
	}
	return nil
}

// coarseMargin is how early a wait leaves the runtime's timers for nanosleep. On Linux an
// idle Go runtime blocks in epoll, whose timeout has millisecond resolution, so a runtime
// timer can fire up to ~1 ms late: a simulated 100 µs service time would become 1 ms. The
// last stretch is slept in the kernel instead, precise to its timer slack (sleep_linux.go);
// other systems sleep it on the runtime's timers, which are precise there (sleep_other.go).
const coarseMargin = 1500 * time.Microsecond

// maxKernelSleepers bounds the OS threads parked in nanosleep at once. Beyond it so many
// operations are in flight that the runtime is busy and its timers are precise anyway.
const maxKernelSleepers = 32

// waitUntil blocks until the simulated time until (ns since Init) or until ctx ends; a wait
// cut short returns an error wrapping ctx.Err(), so a deadline classifies as a timeout. The
// final stretch (at most coarseMargin) is not interruptible, so a cancelled op may return
// that much after its deadline.
func (d *Driver) waitUntil(ctx context.Context, until int64, what string) error {
	done := ctx.Done()
	for {
		remaining := time.Duration(until - d.now())
		if remaining <= 0 {
			return nil
		}
		if remaining <= coarseMargin {
			if d.kernelSleepers.Add(1) <= maxKernelSleepers {
				nanosleep(remaining)
				d.kernelSleepers.Add(-1)
				continue
			}
			d.kernelSleepers.Add(-1)
		} else {
			remaining -= coarseMargin
		}
		if done == nil {
			time.Sleep(remaining)
			continue
		}
		t := time.NewTimer(remaining)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			d.cancelledWaits.Add(1)
			return fmt.Errorf("memory: simulated %s cut short: %w", what, ctx.Err())
		}
	}
}

// keys counts the stored keys.
func (d *Driver) keys() int {
	n := 0
	for i := range d.shards {
		sh := &d.shards[i]
		sh.mu.RLock()
		if sh.t.open() {
			n += sh.t.n
		}
		sh.mu.RUnlock()
	}
	return n
}

// ConnectionInfo describes the store: keys and bytes stored (as maxBytes counts them), the
// limit, shards and the simulation in effect.
func (d *Driver) ConnectionInfo() map[string]string {
	s := d.cur.Load()
	if s == nil || s.closed {
		return map[string]string{"state": "closed"}
	}
	info := map[string]string{
		"state":      "open",
		"keys":       strconv.Itoa(d.keys()),
		"bytes":      strconv.FormatInt(d.stored.Load(), 10),
		"maxBytes":   "unlimited",
		"shards":     strconv.Itoa(s.opts.Shards),
		"simulation": "off",
	}
	if s.maxBytes > 0 {
		info["maxBytes"] = strconv.FormatInt(s.maxBytes, 10)
	}
	if !s.slow {
		return info
	}
	info["simulation"] = "on"
	o := s.opts
	if s.serviceMin > 0 || s.serviceSpan > 0 {
		info["serviceTime"] = o.ServiceTime.String()
		if s.serviceSpan > 0 {
			info["serviceTime"] += ".." + o.ServiceTimeMax.String()
		}
	}
	if s.slot > 0 {
		info["capacity"] = strconv.FormatFloat(o.Capacity, 'g', -1, 64) + " ops/s"
	}
	if s.stallEvery > 0 {
		info["stalls"] = o.StallFor.String() + " every " + o.StallEvery.String()
	}
	if s.errorRatio > 0 {
		info["errors"] = strconv.FormatFloat(o.ErrorRatio, 'g', -1, 64) + " " + o.ErrorClass
	}
	return info
}

// DriverStats reports the stored keys and bytes (as maxBytes counts them), writes refused
// by maxBytes, and what the simulation did: operations held by a stall, queued for
// capacity, given a service time, failed on purpose, and waits cut short by the op timeout.
func (d *Driver) DriverStats() map[string]int64 {
	return map[string]int64{
		"keys":           int64(d.keys()),
		"bytes":          d.stored.Load(),
		"rejectedWrites": d.rejectedWrites.Load(),
		"stalledOps":     d.stalledOps.Load(),
		"queuedOps":      d.queuedOps.Load(),
		"delayedOps":     d.delayedOps.Load(),
		"injectedErrors": d.injectedErrors.Load(),
		"cancelledWaits": d.cancelledWaits.Load(),
	}
}
