package script

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/ndbench/ndbench/driver"
)

// Name is the name the driver is registered under.
const Name = "script"

// Function indexes: read and write, then one per declared operation (slots), in order.
const (
	fnRead  = 0
	fnWrite = 1
	fnSlots = 2
)

// slots are the named operations a script can define. The engine checks a configuration's
// operation names against the registry before any script is loaded, so they are declared
// here, as fixed names, like the http driver's slots.
var slots = []driver.Operation{
	{Name: "workflow", Kind: driver.KindOther, Help: "the script's workflow(key): a multi-step operation (NDBench's runWorkFlow)"},
	{Name: "read1", Kind: driver.KindRead, Help: "the script's read1(key), read like Driver.Read (null = miss)"},
	{Name: "read2", Kind: driver.KindRead, Help: "the script's read2(key), read like Driver.Read (null = miss)"},
	{Name: "write1", Kind: driver.KindWrite, Help: "the script's write1(key, value), given the generated value"},
	{Name: "write2", Kind: driver.KindWrite, Help: "the script's write2(key, value), given the generated value"},
	{Name: "other1", Kind: driver.KindOther, Help: "the script's other1(key)"},
	{Name: "other2", Kind: driver.KindOther, Help: "the script's other2(key)"},
}

// fnNames are the script's function names by function index.
var fnNames = func() []string {
	names := []string{driver.OpRead, driver.OpWrite}
	for _, s := range slots {
		names = append(names, s.Name)
	}
	return names
}()

// fnKinds are the kinds by function index.
var fnKinds = func() []driver.Kind {
	kinds := []driver.Kind{driver.KindRead, driver.KindWrite}
	for _, s := range slots {
		kinds = append(kinds, s.Kind)
	}
	return kinds
}()

func init() {
	driver.MustRegister(driver.Definition{
		Name:       Name,
		Summary:    "a JavaScript file defines the operations, composing bundled drivers, HTTP calls and helpers",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Operations: slots,
	})
}

// Driver runs the operations of a script. The loaded script (a generation: compiled
// program, runtime pool, stores it opened) is swapped atomically on reload, so operations
// never take a lock shared by all workers.
type Driver struct {
	cur atomic.Pointer[generation]

	reloadMu sync.Mutex // serialises loads (watcher, Reconfigure, Close)
	opts     Options    // guarded by reloadMu
	closed   bool       // guarded by reloadMu

	stopWatch chan struct{}
	watchDone chan struct{}
	// stopReload cancels a reload of the watcher in progress, so Close need not wait
	// for a script's init to time out. Set before the watcher starts.
	stopReload context.CancelFunc
	retiring   sync.WaitGroup // replaced generations closing

	reloads      atomic.Int64
	reloadErrors atomic.Int64
	lastErrMu    sync.Mutex
	lastErr      string
}

// Init loads the script: compiles it, runs it and its init(config) in a first runtime and
// checks that it defines operations, then starts watching the file.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	if o.File == "" && o.Source == "" {
		return noScript()
	}
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	d.opts = *o
	src, err := readSource(o)
	if err != nil {
		return err
	}
	g, err := load(ctx, src, o, nil)
	if err != nil {
		return err
	}
	d.cur.Store(g)
	if o.File != "" && o.Watch > 0 {
		d.stopWatch, d.watchDone = make(chan struct{}), make(chan struct{})
		var wctx context.Context
		wctx, d.stopReload = context.WithCancel(context.Background())
		go d.watch(wctx, o.File, o.Watch, d.stopWatch, d.watchDone)
	}
	return nil
}

// source is a script's text and where it came from.
type source struct {
	name string // file name in messages and stack traces
	file bool   // read from the file option (its errors quote nothing of it: fileerrors.go)
	text string
	hash [sha256.Size]byte
}

// readSource reads the script of o: the file's content, or the source option.
func readSource(o *Options) (source, error) {
	if o.File == "" {
		return source{name: "source", text: o.Source, hash: sha256.Sum256([]byte(o.Source))}, nil
	}
	data, err := readFile(o.File)
	if err != nil {
		return source{}, driver.FieldErrors{&driver.FieldError{Field: "file", Value: o.File, Allowed: "a readable JavaScript file: " + err.Error()}}
	}
	text := string(data)
	return source{name: o.File, file: true, text: text, hash: sha256.Sum256(data)}, nil
}

// maxScriptSize bounds what is read of file: far above any script, far below what
// would hurt the process.
const maxScriptSize = 8 << 20

// readFile reads a script file: a regular file (a device such as /dev/zero, or a FIFO,
// would be read for ever) of maxScriptSize at most. The checks are made on the file
// opened, so a file swapped in between cannot pass them.
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, st.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxScriptSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxScriptSize {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, maxScriptSize>>20)
	}
	return data, nil
}

// Reconfigure reloads the script with a new config; the running script stays if the new
// one fails to load.
func (d *Driver) Reconfigure(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if d.closed {
		return errClosed
	}
	next := d.opts
	next.Config = o.Config
	if err := d.reloadLocked(ctx, next); err != nil {
		return err
	}
	d.opts = next
	return nil
}

// reloadLocked loads the script anew with opts and swaps it in, or keeps the running one
// and records the error. The old generation is closed once its operations have finished.
func (d *Driver) reloadLocked(ctx context.Context, opts Options) error {
	old := d.cur.Load()
	src, err := readSource(&opts)
	if err == nil {
		var g *generation
		if g, err = load(ctx, src, &opts, old); err == nil {
			d.cur.Store(g)
			d.reloads.Add(1)
			d.setLastErr("")
			if old != nil {
				// The old script finishes its operations in flight in the background, so
				// a reload never waits for a slow one; Close waits for it.
				d.retiring.Add(1)
				go func() {
					defer d.retiring.Done()
					if err := old.close(false); err != nil {
						slog.Warn("script: closing the replaced script", "script", old.src.name, "err", err)
					}
				}()
			}
			return nil
		}
	}
	d.reloadErrors.Add(1)
	d.setLastErr(err.Error())
	return err
}

func (d *Driver) setLastErr(s string) {
	d.lastErrMu.Lock()
	d.lastErr = s
	d.lastErrMu.Unlock()
}

// watch reads the file every interval and reloads it when its content changed. Polling
// (not inotify) works the same on every platform and file system, including config maps
// whose files are swapped by symlink; it compares content hashes because size and
// modification time miss a rewrite within the file system's timestamp granularity. A
// script is small, so reading it each interval costs next to nothing.
func (d *Driver) watch(ctx context.Context, file string, every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	var pending, failed [sha256.Size]byte // content seen once; content that failed to load
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		d.reloadMu.Lock()
		opts := d.opts
		d.reloadMu.Unlock()
		src, err := readSource(&opts)
		g := d.cur.Load()
		if err != nil || g == nil || src.hash == g.src.hash || src.hash == failed {
			continue // missing for a moment (being replaced), unchanged, or known bad
		}
		// A file being written in place (truncated, then filled) can be read half-written:
		// load content only once it stayed the same for a whole interval.
		if src.hash != pending {
			pending = src.hash
			continue
		}
		d.reloadMu.Lock()
		if !d.closed {
			lctx, lcancel := context.WithTimeout(ctx, time.Minute)
			if err := d.reloadLocked(lctx, d.opts); err != nil {
				failed = src.hash
				slog.Warn("script: reload failed; the running script stays", "file", file, "err", err)
			} else {
				slog.Info("script: reloaded", "file", file)
			}
			lcancel()
		}
		d.reloadMu.Unlock()
	}
}

// errClosed is the error of operations after Close.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("script driver closed"))

// Close stops the watcher, interrupts the operations in flight and waits a moment for
// them, calls the script's close() and closes the stores it opened. It returns within
// seconds whatever the script does: a script spinning in a loop is interrupted, and one
// stuck in a host call is left to end on its own once its stores are closed.
func (d *Driver) Close() error {
	if d.stopReload != nil {
		d.stopReload() // a reload's init in progress ends now, not at initTimeout
	}
	d.reloadMu.Lock()
	d.closed = true
	stop, done := d.stopWatch, d.watchDone
	d.stopWatch = nil
	d.reloadMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	var err error
	if g := d.cur.Swap(nil); g != nil {
		err = g.close(true)
	}
	d.retiring.Wait()
	return err
}

// Read runs the script's read(key).
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	return d.run(ctx, fnRead, key, nil)
}

// Write runs the script's write(key, value).
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	_, err := d.run(ctx, fnWrite, key, value)
	return err
}

// Do runs the script function of slot op.
func (d *Driver) Do(ctx context.Context, op int, key string, value []byte) ([]byte, error) {
	if op < 0 || op >= len(slots) {
		return nil, fmt.Errorf("script: no operation %d", op)
	}
	if slots[op].Kind != driver.KindWrite {
		value = nil
	}
	return d.run(ctx, fnSlots+op, key, value)
}

// RunWorkflow runs the script's workflow(key) (NDBench's runWorkFlow).
func (d *Driver) RunWorkflow(ctx context.Context, key string) error {
	_, err := d.run(ctx, fnSlots, key, nil)
	return err
}

// run runs function fn of the current generation in a runtime of its pool.
func (d *Driver) run(ctx context.Context, fn int, key string, value []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var g *generation
	for {
		if g = d.cur.Load(); g == nil {
			return nil, errClosed
		}
		g.mu.RLock()
		if !g.closed {
			break
		}
		// Swapped out while we looked: the driver already holds the next one (or none).
		g.mu.RUnlock()
	}
	defer g.mu.RUnlock()
	if e := g.memErr.Load(); e != nil {
		// Stopped for memory: refused until the watchdog has dropped the runtimes and
		// measured the heap again, so a runaway cannot start over at once.
		return nil, *e
	}
	if !g.has[fn] {
		return nil, driver.Wrap(driver.ClassRejected, fmt.Errorf("script %s defines no function %s", g.src.name, fnNames[fn]))
	}
	v, err := g.get(ctx)
	if err != nil {
		return nil, err
	}
	out, err := v.call(ctx, fn, key, value)
	g.put(v)
	return out, err
}

// ConnectionInfo describes the loaded script and the stores it opened.
func (d *Driver) ConnectionInfo() map[string]string {
	info := map[string]string{}
	if g := d.cur.Load(); g != nil {
		info["script"] = g.src.name
		info["sha256"] = hex.EncodeToString(g.src.hash[:8])
		info["stores"] = strings.Join(g.stores.names(), ",")
		var fns []string
		for i, ok := range g.has {
			if ok {
				fns = append(fns, fnNames[i])
			}
		}
		info["operations"] = strings.Join(fns, ",")
	}
	d.lastErrMu.Lock()
	if d.lastErr != "" {
		info["lastReloadError"] = d.lastErr
	}
	d.lastErrMu.Unlock()
	return info
}

// DriverStats counts reloads, failed reloads, and the runtimes of the loaded script and
// its operations the watchdog interrupted.
func (d *Driver) DriverStats() map[string]int64 {
	s := map[string]int64{"reloads": d.reloads.Load(), "reloadErrors": d.reloadErrors.Load()}
	if g := d.cur.Load(); g != nil {
		s["runtimes"] = g.created.Load()
		s["interrupts"] = g.interrupts.Load()
		s["memoryStops"] = g.memStops.Load()
	}
	return s
}

// generation is one loaded script: its program, config, pool of runtimes and the stores
// its init opened, shared by all its runtimes.
type generation struct {
	src    source
	prog   *goja.Program
	config string
	has    []bool // by function index: the script defines it
	stores *storeSet

	initTimeout, callTimeout time.Duration
	memoryLimit              uint64

	// killed is closed when the driver closes: sleeps end at once.
	killed    chan struct{}
	closeOnce sync.Once
	closeErr  error
	// memErr is set while the memory watchdog has stopped the scripts: calls fail with
	// it until the runtimes are dropped and the heap measured again.
	memErr   atomic.Pointer[error]
	memStops atomic.Int64

	// mu is read-locked by every operation in flight; close takes it to wait for them.
	mu     sync.RWMutex
	closed bool

	sem     chan struct{} // bounds the runtimes in use; nil for no bound
	poolMu  sync.Mutex
	idle    []*vm
	created atomic.Int64
	// interrupts counts operations the watchdog interrupted (JavaScript past its deadline).
	interrupts atomic.Int64

	allMu        sync.Mutex
	all          []*vm // every runtime, for the watchdog
	stopWatchdog chan struct{}
	watchdogDone chan struct{}
}

// watchdogEvery is how often the watchdog looks for operations past their context. A
// watchdog, not a context.AfterFunc per operation: that registration and its removal
// cost more than the JavaScript call of a trivial operation, while only JavaScript that
// computes past its deadline (a loop) needs the interrupt, which this ends within one
// interval.
const watchdogEvery = 10 * time.Millisecond

// watchdog interrupts the runtimes whose operation's context ended or that ran past
// their limit, and watches the heap (see watchMemory), until close.
func (g *generation) watchdog() {
	defer close(g.watchdogDone)
	t := time.NewTicker(watchdogEvery)
	defer t.Stop()
	mem := newMemWatch(g.memoryLimit)
	// A runaway allocation doubles the heap in well under a tick: the memory check
	// also runs at the end of every garbage collection, when the live figure is new.
	gcDone := make(chan struct{}, 1)
	onEveryGC(gcDone, g.stopWatchdog)
	var vms []*vm
	for {
		checkTimes := true
		var now time.Time
		select {
		case <-g.stopWatchdog:
			return
		case now = <-t.C:
		case <-gcDone:
			now, checkTimes = time.Now(), false
		}
		g.allMu.Lock()
		vms = append(vms[:0], g.all...)
		g.allMu.Unlock()
		if checkTimes {
			for _, v := range vms {
				v.checkInterrupt(now)
			}
		}
		g.watchMemory(mem, vms, now)
		// The slice is kept for the next round: it must not keep dropped runtimes
		// (and all they allocated) alive.
		clear(vms)
	}
}

// forget removes v from the watchdog's list (a runtime dropped from the pool).
func (g *generation) forget(v *vm) {
	g.allMu.Lock()
	defer g.allMu.Unlock()
	if i := slices.Index(g.all, v); i >= 0 {
		// slices.Delete clears the slot it frees: a dropped runtime left in the backing
		// array would keep its whole heap alive.
		g.all = slices.Delete(g.all, i, i+1)
	}
}

// load compiles src and runs it with init(config) in a first runtime; old, the running
// generation if any, must not lose a function the new one lacks (an op class may use it).
func load(ctx context.Context, src source, o *Options, old *generation) (_ *generation, err error) {
	prog, err := goja.Compile(src.name, src.text, false)
	if err != nil {
		return nil, compileError(src, err)
	}
	var prev *storeSet
	if old != nil {
		prev = old.stores
	}
	g := &generation{src: src, prog: prog, config: o.Config, stores: newStoreSet(prev),
		initTimeout: o.InitTimeout, callTimeout: o.CallTimeout, memoryLimit: uint64(o.MemoryLimit),
		killed: make(chan struct{})}
	if o.Runtimes > 0 {
		g.sem = make(chan struct{}, o.Runtimes)
	}
	g.stopWatchdog, g.watchdogDone = make(chan struct{}), make(chan struct{})
	go g.watchdog()
	defer func() {
		if err != nil {
			_ = g.close(true)
		}
	}()
	v, err := g.newVM(ctx)
	if err != nil {
		return nil, err
	}
	g.has = make([]bool, len(fnNames))
	defined := false
	for i := range fnNames {
		g.has[i] = v.fns[i] != nil
		defined = defined || g.has[i]
	}
	if !defined {
		return nil, fmt.Errorf("script %s defines no operation: want a function named one of %s", src.name, strings.Join(fnNames, ", "))
	}
	if old != nil {
		for i, had := range old.has {
			if had && !g.has[i] {
				return nil, fmt.Errorf("script %s no longer defines %s, which the running script has (an op class may use it)", src.name, fnNames[i])
			}
		}
	}
	g.idle = append(g.idle, v)
	g.stores.loaded()
	return g, nil
}

// get takes an idle runtime or creates one (running the script and init); with a bound
// it waits, for as long as ctx allows, for one to be free.
func (g *generation) get(ctx context.Context) (*vm, error) {
	if g.sem != nil {
		select {
		case g.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("script: waiting for a free runtime (runtimes option): %w", ctx.Err())
		case <-g.killed:
			return nil, errClosed
		}
	}
	g.poolMu.Lock()
	if n := len(g.idle); n > 0 {
		v := g.idle[n-1]
		g.idle = g.idle[:n-1]
		g.poolMu.Unlock()
		return v, nil
	}
	g.poolMu.Unlock()
	v, err := g.newVM(ctx)
	if err != nil {
		if g.sem != nil {
			<-g.sem
		}
		return nil, err
	}
	return v, nil
}

// put returns v to the pool; a runtime that panicked, or that the memory watchdog
// stopped, is dropped instead.
func (g *generation) put(v *vm) {
	if v.broken.Load() {
		g.created.Add(-1)
		g.forget(v)
	} else {
		g.poolMu.Lock()
		g.idle = append(g.idle, v)
		g.poolMu.Unlock()
	}
	if g.sem != nil {
		<-g.sem
	}
}

// closeDrain is how long Close waits for the operations it interrupted: JavaScript
// stops at once, a host call ends with its context or its limit, and one that does not
// (a store that ignores contexts) is left to end once its store is closed.
const closeDrain = 2 * time.Second

// closeLimit bounds the script's close() when the driver closes, below callTimeout: a
// close must return promptly whatever the script does.
const closeLimit = 5 * time.Second

// close runs once: it waits for the operations in flight, runs the script's close() and
// closes the stores. With kill (the driver closing, or a failed load) it first interrupts
// the operations in flight and waits for them closeDrain at most; without (a reload
// retiring the generation) it lets them finish, which their limit bounds.
func (g *generation) close(kill bool) error {
	g.closeOnce.Do(func() { g.closeErr = g.doClose(kill) })
	return g.closeErr
}

func (g *generation) doClose(kill bool) error {
	if kill {
		close(g.killed)
		g.allMu.Lock()
		vms := append([]*vm(nil), g.all...)
		g.allMu.Unlock()
		for _, v := range vms {
			v.stop(errClosed)
		}
	}
	// mu's write lock waits for the operations in flight (they hold its read lock). The
	// lock is taken apart so the wait can be bounded, and released at once: a caller
	// that took g just before it was swapped out must not block on it for ever.
	drained := make(chan struct{})
	go func() {
		g.mu.Lock()
		g.closed = true
		g.mu.Unlock()
		close(drained)
	}()
	if kill {
		t := time.NewTimer(closeDrain)
		select {
		case <-drained:
		case <-t.C:
			slog.Warn("script: closing while operations are still in a host call; closing their stores", "script", g.src.name)
		}
		t.Stop()
	} else {
		<-drained
	}
	var errs []error
	g.poolMu.Lock()
	idle := g.idle
	g.idle = nil
	g.poolMu.Unlock()
	if len(idle) > 0 && idle[0].closeFn != nil {
		limit := min(g.callTimeout, closeLimit)
		if err := idle[0].callClose(context.Background(), limit); err != nil {
			errs = append(errs, err)
		}
	}
	close(g.stopWatchdog)
	<-g.watchdogDone
	errs = append(errs, g.stores.close())
	return errors.Join(errs...)
}
