package script

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	_ "github.com/ndbench/ndbench/drivers/memory" // the store the test scripts use
)

// passthrough stores in the bundled memory driver: the script layer and nothing else.
const passthrough = `
var db;
function init(config) { db = stores.open("memory", config.memory || {}); }
function read(key) { return db.read(key); }
function write(key, value) { db.write(key, value); }
`

// within runs f and returns how long it took; a minute's patience turns an f that never
// returns (a deadline or timeout not enforced) into a failure. Whether f was stopped by
// its deadline is judged by what it returned (a timeout class; a sleep of 10 s that ran
// out returns no error), not by how long a loaded machine took.
func within(t *testing.T, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(time.Minute):
		t.Fatalf("%s: not returned after a minute", what)
		return 0
	}
}

func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	d, _, err := driver.Open(context.Background(), Name, values)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d.(*Driver)
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:       Name,
		Options:    map[string]string{"source": passthrough},
		LiveValues: map[string]string{"config": `{"memory": {"shards": "8"}}`},
	})
}

// TestExample loads the example script and runs its operations.
func TestExample(t *testing.T) {
	ctx := context.Background()
	d := open(t, map[string]string{"file": "../../examples/script/cache-aside.js", "config": `{"db": {"driver": "memory", "options": {"serviceTime": "1ms"}}}`})
	if _, err := d.Read(ctx, "k"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read of a new key: %v, want ErrNotFound", err)
	}
	if err := d.RunWorkflow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(ctx, "k"); err != nil || len(v) != 128 {
		t.Fatalf("read after workflow: %d bytes, %v; want the 128 the workflow wrote", len(v), err)
	}
	if got := d.ConnectionInfo()["stores"]; got != "memory,memory" {
		t.Fatalf("stores = %q, want memory,memory (cache and db, opened once)", got)
	}
}

func TestNamedOperations(t *testing.T) {
	ctx := context.Background()
	d := open(t, map[string]string{"source": passthrough + `
var steps = 0;
function read1(key) { return key === "none" ? null : "r1:" + key; }
function write1(key, value) { db.write("w1:" + key, value); }
function other1(key) { steps++; }
function workflow(key) {
	if (db.read(key) === null) { db.write(key, bytes("filled")); }
	steps++;
}
`})
	def, _ := driver.Lookup(Name)
	idx := func(name string) int {
		_, i, ok := def.Operation(name)
		if !ok {
			t.Fatalf("no operation %s", name)
		}
		return i
	}
	if v, err := d.Do(ctx, idx("read1"), "a", nil); err != nil || string(v) != "r1:a" {
		t.Fatalf("read1 = %q, %v", v, err)
	}
	if _, err := d.Do(ctx, idx("read1"), "none", nil); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read1 returning null: %v, want ErrNotFound", err)
	}
	if _, err := d.Do(ctx, idx("write1"), "a", []byte{0, 255}); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(ctx, "w1:a"); err != nil || string(v) != "\x00\xff" {
		t.Fatalf("read of write1's key = %q, %v", v, err)
	}
	if _, err := d.Do(ctx, idx("other1"), "a", nil); err != nil {
		t.Fatal(err)
	}
	if err := d.RunWorkflow(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Do(ctx, idx("workflow"), "wf", nil); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(ctx, "wf"); err != nil || string(v) != "filled" {
		t.Fatalf("read after workflow = %q, %v", v, err)
	}
	_, err := d.Do(ctx, idx("other2"), "a", nil)
	if driver.Classify(err) != driver.ClassRejected || !strings.Contains(err.Error(), "defines no function other2") {
		t.Fatalf("undefined slot: %v (class %v); want rejected naming other2", err, driver.Classify(err))
	}
	if got := d.ConnectionInfo()["operations"]; got != "read,write,workflow,read1,write1,other1" {
		t.Fatalf("operations = %q", got)
	}
}

func TestErrorClasses(t *testing.T) {
	ctx := context.Background()
	d := open(t, map[string]string{"source": `
var bad;
function init() { bad = stores.open("memory", {errorRatio: 1, errorClass: "throttled"}); }
function read(key) {
	switch (key) {
	case "fail": fail("throttled", "slow down");
	case "throw": throw new NdbenchError("rejected", "no");
	case "nested": return bad.read(key);
	case "caught":
		try { bad.read(key); } catch (e) { if (e.class !== "throttled") { throw new Error("class " + e.class); } throw e; }
	case "plain": null.x;
	case "unknown": fail("weird", "what");
	case "recurse": var f = function(n) { return f(n + 1) + 1; }; f(0);
	}
	return "ok";
}
`, "file": ""})
	for _, tt := range []struct {
		key   string
		class driver.Class
		msg   string
	}{
		{"fail", driver.ClassThrottled, "slow down (script source:5:"},
		{"throw", driver.ClassRejected, "no (script source:6:"},
		{"nested", driver.ClassThrottled, "script source:7:"},
		{"caught", driver.ClassThrottled, "script source:"},
		{"plain", driver.ClassOther, "TypeError"},
		{"unknown", driver.ClassOther, `unknown class "weird"`},
		{"recurse", driver.ClassOther, "stack overflow"},
	} {
		_, err := d.Read(ctx, tt.key)
		if driver.Classify(err) != tt.class || err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v (class %v); want class %v, message with %q", tt.key, err, driver.Classify(err), tt.class, tt.msg)
		}
	}
	if v, err := d.Read(ctx, "x"); err != nil || string(v) != "ok" {
		t.Fatalf("read after failures = %q, %v", v, err)
	}
}

// TestDeadlineInterrupts runs an endless loop, a long sleep and a busy nested call under a
// deadline: each ends as a timeout, and the same runtime (runtimes=1) serves the next
// operation. callTimeout is 10 minutes, so only the deadline can end them before the
// minute's patience (the 10 s sleep and call would end without an error).
func TestDeadlineInterrupts(t *testing.T) {
	d := open(t, map[string]string{"runtimes": "1", "callTimeout": "10m", "source": `
var slow;
function init() { slow = stores.open("memory", {serviceTime: "10s"}); }
function read(key) {
	if (key === "loop") { for (;;) {} }
	if (key === "catch") { for (;;) { try { for (;;) {} } catch (e) {} } }
	if (key === "sleep") { sleep(10000); }
	if (key === "nested") { return slow.read(key); }
	return "ok";
}
`})
	for _, key := range []string{"loop", "catch", "sleep", "nested"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		var err error
		within(t, key+" with a 100ms deadline", func() { _, err = d.Read(ctx, key) })
		cancel()
		if driver.Classify(err) != driver.ClassTimeout {
			t.Errorf("%s: %v (class %v), want a timeout", key, err, driver.Classify(err))
		}
		if v, err := d.Read(context.Background(), "x"); err != nil || string(v) != "ok" {
			t.Fatalf("after %s: %q, %v; want the runtime usable again", key, v, err)
		}
	}
	if n := d.DriverStats()["runtimes"]; n != 1 {
		t.Fatalf("runtimes = %d, want the one reused", n)
	}
	// loop and catch need the watchdog; sleep and nested end with their context.
	if n := d.DriverStats()["interrupts"]; n < 2 {
		t.Fatalf("interrupts = %d, want at least the 2 loops", n)
	}
}

// TestConcurrentRuntimes runs many goroutines against a bounded pool, with deadlines
// ending some operations mid-loop, under -race.
func TestConcurrentRuntimes(t *testing.T) {
	d := open(t, map[string]string{"runtimes": "3", "source": passthrough + `
function other1(key) { var n = 0; for (var i = 0; i < 20000; i++) { n += i; } }
`})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				key := string(rune('a' + i%5))
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Millisecond+50*time.Microsecond)
				_, _ = d.Do(ctx, 5, key, nil) // other1: may be interrupted
				cancel()
				if err := d.Write(context.Background(), key, []byte(key)); err != nil {
					t.Error(err)
					return
				}
				if v, err := d.Read(context.Background(), key); err != nil || string(v) != key {
					t.Errorf("read %s = %q, %v", key, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := d.DriverStats()["runtimes"]; n < 1 || n > 3 {
		t.Fatalf("runtimes = %d, want 1..3", n)
	}
}

// TestReload changes the file under a running driver: a good script replaces the old
// one; a broken one, or one dropping an operation, leaves the running script in place
// and is reported.
func TestReload(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "s.js")
	write := func(src string) {
		t.Helper()
		// Written aside and renamed, as careful editors and config maps do; the watcher
		// also waits for a file written in place to settle.
		if err := os.WriteFile(file+".tmp", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	// Each version keeps data in a memory store, which a reload takes over (same driver,
	// same options), and its close() leaves a mark there.
	version := func(v string) string {
		return `var db; function init() { db = stores.open("memory"); }
function read(key) { return key === "k" ? "` + v + `" : db.read(key); }
function write(key, value) { db.write(key, value); }
function close() { db.write("closed-` + v + `", bytes("yes")); }`
	}
	write(version("v1"))
	d := open(t, map[string]string{"file": file, "watch": "5ms"})
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 5s; stats %v, info %v", what, d.DriverStats(), d.ConnectionInfo())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	read := func() string {
		v, err := d.Read(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	if got := read(); got != "v1" {
		t.Fatalf("read = %q", got)
	}
	// Reads run throughout the swaps and must always succeed with some version.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() }) // before the driver's Close (LIFO)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if v, err := d.Read(ctx, "k"); err != nil || !strings.HasPrefix(string(v), "v") {
				t.Errorf("read during reloads = %q, %v", v, err)
				return
			}
		}
	}()
	if err := d.Write(ctx, "kept", []byte("data")); err != nil {
		t.Fatal(err)
	}
	write(version("v2"))
	wait("reload to v2", func() bool { return read() == "v2" })
	if v, err := d.Read(ctx, "kept"); err != nil || string(v) != "data" {
		t.Fatalf("after the reload kept = %q, %v; want data (the store taken over)", v, err)
	}
	wait("v1's close()", func() bool { v, err := d.Read(ctx, "closed-v1"); return err == nil && string(v) == "yes" })

	write(`function read(key) { return "v3" ` + "\n") // a syntax error
	wait("reported reload error", func() bool { return d.DriverStats()["reloadErrors"] >= 1 })
	if got := read(); got != "v2" {
		t.Fatalf("after a broken reload read = %q, want v2 still", got)
	}
	if e := d.ConnectionInfo()["lastReloadError"]; !strings.Contains(e, "SyntaxError") && !strings.Contains(e, "Unexpected") {
		t.Fatalf("lastReloadError = %q, want the syntax error", e)
	}

	write(`function read(key) { return "v4"; }`) // drops write
	wait("refused reload", func() bool { return d.DriverStats()["reloadErrors"] >= 2 })
	if e := d.ConnectionInfo()["lastReloadError"]; !strings.Contains(e, "no longer defines write") {
		t.Fatalf("lastReloadError = %q, want the dropped write", e)
	}

	write(`function read(key) { return "v5"; } function write(key, value) {} function init() { throw new Error("init broke"); }`)
	wait("failed init", func() bool { return d.DriverStats()["reloadErrors"] >= 3 })
	if got := read(); got != "v2" {
		t.Fatalf("after a failed init read = %q, want v2 still", got)
	}

	write(version("v6"))
	wait("reload to v6", func() bool { return read() == "v6" })
	if _, ok := d.ConnectionInfo()["lastReloadError"]; ok {
		t.Fatalf("lastReloadError still set after a good reload: %v", d.ConnectionInfo())
	}
}

// TestReconfigureConfig reloads with a new config, and keeps the old on a failing init.
func TestReconfigureConfig(t *testing.T) {
	ctx := context.Background()
	src := `var c; function init(config) { if (config.bad) { throw new Error("bad config"); } c = config.v; }
function read(key) { return String(c); } function write(key, value) {}`
	d := open(t, map[string]string{"source": src, "config": `{"v": 1}`})
	reconf := func(config string) error {
		opts, err := driver.NewOptions(Name, map[string]string{"source": src, "config": config})
		if err != nil {
			t.Fatal(err)
		}
		return d.Reconfigure(ctx, opts)
	}
	if err := reconf(`{"v": 2}`); err != nil {
		t.Fatal(err)
	}
	if v, _ := d.Read(ctx, "k"); string(v) != "2" {
		t.Fatalf("read = %q, want 2", v)
	}
	if err := reconf(`{"bad": true}`); err == nil || !strings.Contains(err.Error(), "bad config") {
		t.Fatalf("reconfigure with a failing init: %v", err)
	}
	if v, _ := d.Read(ctx, "k"); string(v) != "2" {
		t.Fatalf("read after a failed reconfigure = %q, want 2", v)
	}
}

func TestBadOptions(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values map[string]string
		field  string
	}{
		{"neither file nor source", map[string]string{}, "file"},
		{"both", map[string]string{"file": "a.js", "source": "function read(){}"}, "source"},
		{"config not JSON", map[string]string{"source": "function read(){}", "config": "{"}, "config"},
		{"negative runtimes", map[string]string{"source": "function read(){}", "runtimes": "-1"}, "runtimes"},
		{"missing file", map[string]string{"file": "/nonexistent/x.js"}, "file"},
		{"source does not compile", map[string]string{"source": "function read( {"}, "source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, _, err := driver.Open(context.Background(), Name, tt.values)
			if err == nil {
				_ = d.Close()
				t.Fatal("opened")
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok || len(fes) == 0 || fes[0].Field != tt.field {
				t.Fatalf("%v; want a field error naming %s", err, tt.field)
			}
		})
	}
	for _, src := range []string{"function read( {", "var x = 1;", "null.x;", "function init() { stores.open('nosuch'); } function read() {}"} {
		if d, _, err := driver.Open(context.Background(), Name, map[string]string{"source": src}); err == nil {
			_ = d.Close()
			t.Errorf("script %q loaded", src)
		}
	}
}

// TestBytes round-trips every byte value through the script's value conversions: the
// engine's value as an ArrayBuffer, a Uint8Array returned, and strings.
func TestBytes(t *testing.T) {
	ctx := context.Background()
	d := open(t, map[string]string{"source": passthrough + `
var kept;
function read1(key) { return new Uint8Array(db.read(key)); }
function write1(key, value) { kept = value; }
function read2(key) { return new Uint8Array(kept)[0]; }
`})
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	if err := d.Write(ctx, "k", all); err != nil {
		t.Fatal(err)
	}
	v, err := d.Do(ctx, 1, "k", nil) // read1
	if err != nil || string(v) != string(all) {
		t.Fatalf("read1 = %v, %v", v, err)
	}
	if _, err := d.Do(ctx, 3, "k", all); err != nil { // write1 keeps the value
		t.Fatal(err)
	}
	if _, err := d.Do(ctx, 2, "k", nil); err == nil || !strings.Contains(err.Error(), "detached") {
		t.Fatalf("use of a kept write value after the call: %v; want a TypeError (detached)", err)
	}
}

// TestReloadInFlight replaces a script while an operation of the old one runs: the
// reload does not wait for it, and the operation finishes on the old script's store,
// which is closed only afterwards.
func TestReloadInFlight(t *testing.T) {
	ctx := context.Background()
	// The slow read waits in a call to this server until the test lets it go, so it is
	// in flight for the whole reload however the machine runs (it slept 2 s, and the
	// reload was bounded by 1.5 s of wall clock).
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	defer let()
	src := `var db, v, base;
function init(config) { v = config.v; base = config.url; db = stores.open("memory", {shards: String(config.shards)}); db.write("k", bytes("v" + v)); }
function read(key) { if (key === "slow") { http.get(base + "/hold"); } return db.read("k"); }
function write(key, value) {}`
	d := open(t, map[string]string{"source": src, "config": `{"v": 1, "shards": 4, "url": "` + srv.URL + `"}`})
	done := make(chan string, 1)
	go func() {
		v, err := d.Read(ctx, "slow")
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(v)
	}()
	<-arrived // the slow read is waiting in v1
	opts, err := driver.NewOptions(Name, map[string]string{"source": src, "config": `{"v": 2, "shards": 8, "url": "` + srv.URL + `"}`})
	if err != nil {
		t.Fatal(err)
	}
	// A reload that waited for the operation in flight would wait for ever: the test lets
	// it go only after the reload.
	within(t, "the reload, an operation in flight", func() { err = d.Reconfigure(ctx, opts) })
	if err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(ctx, "k"); err != nil || string(v) != "v2" {
		t.Fatalf("read after the reload = %q, %v; want v2", v, err)
	}
	let()
	if got := <-done; got != "v1" {
		t.Fatalf("the operation in flight during the reload returned %q; want v1, from the old script's store", got)
	}
}

// TestCloseStopsEverything opens, reloads (file and config) and closes a driver, and
// checks that no goroutine of it (watcher, watchdogs, background closes) is left.
func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	file := filepath.Join(t.TempDir(), "s.js")
	if err := os.WriteFile(file, []byte(passthrough), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _, err := driver.Open(context.Background(), Name, map[string]string{"file": file, "watch": "5ms"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(passthrough+"\nfunction other1(key) {}"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.(*Driver).DriverStats()["reloads"] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no reload")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
