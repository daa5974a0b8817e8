package script

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// TestInitTimeout loads scripts whose loading never ends (a loop in init or at the top
// level, a sleep in init): Open fails within initTimeout as a timeout naming the option,
// though the caller's context has no deadline.
func TestInitTimeout(t *testing.T) {
	for _, tt := range []struct {
		name, src string
	}{
		{"loop in init", `function init() { for (;;) {} } function read(key) {}`},
		{"loop caught in init", `function init() { for (;;) { try { for (;;) {} } catch (e) {} } } function read(key) {}`},
		{"loop at the top level", `for (;;) {} function read(key) {}`},
		{"sleep in init", `function init() { sleep(1e9); } function read(key) {}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var d driver.Driver
			var err error
			within(t, "Open with initTimeout 200ms", func() {
				d, _, err = driver.Open(context.Background(), Name, map[string]string{"source": tt.src, "initTimeout": "200ms"})
			})
			if err == nil {
				_ = d.Close()
				t.Fatal("opened")
			}
			if driver.Classify(err) != driver.ClassTimeout || !strings.Contains(err.Error(), "initTimeout") {
				t.Errorf("Open: %v (class %v); want a timeout naming initTimeout", err, driver.Classify(err))
			}
		})
	}
}

// TestCallTimeout runs runaway operations with no deadline of their own (context
// Background): each is stopped at callTimeout as a timeout naming the option, and the
// same runtime serves the next call.
func TestCallTimeout(t *testing.T) {
	d := open(t, map[string]string{"runtimes": "1", "callTimeout": "150ms", "source": `
var slow;
function init() { slow = stores.open("memory", {serviceTime: "10s"}); }
function read(key) {
	if (key === "loop") { for (;;) {} }
	if (key === "catch") { for (;;) { try { for (;;) {} } catch (e) {} } }
	if (key === "sleep") { sleep(1e9); }
	if (key === "sleeps") { for (;;) { sleep(20); } }
	if (key === "nested") { return slow.read(key); }
	return "ok";
}
`})
	for _, key := range []string{"loop", "catch", "sleep", "sleeps", "nested"} {
		t.Run(key, func(t *testing.T) {
			var err error
			within(t, "a runaway call with callTimeout 150ms", func() { _, err = d.Read(context.Background(), key) })
			if driver.Classify(err) != driver.ClassTimeout {
				t.Errorf("%v (class %v), want a timeout", err, driver.Classify(err))
			}
			if key != "nested" && (err == nil || !strings.Contains(err.Error(), "callTimeout")) {
				t.Errorf("%v; want the message to name callTimeout", err)
			}
			if v, err := d.Read(context.Background(), "x"); err != nil || string(v) != "ok" {
				t.Fatalf("after %s: %q, %v; want the runtime usable again", key, v, err)
			}
		})
	}
	if n := d.DriverStats()["runtimes"]; n != 1 {
		t.Fatalf("runtimes = %d, want the one reused", n)
	}
}

// TestCloseStopsRunawayScripts closes a driver while its script spins, sleeps or spins in
// its own close(): Close returns promptly, and the operation in flight fails.
func TestCloseStopsRunawayScripts(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values map[string]string
		key    string // an operation running when Close is called; "" for none
		queued bool   // and another one waiting for its runtime
	}{
		// callTimeout 10m: only Close can end these operations before the patiences.
		{"operation spinning", map[string]string{"callTimeout": "10m", "source": `function read(key) { for (;;) {} }`}, "k", false},
		{"operation spinning in catch", map[string]string{"callTimeout": "10m", "source": `function read(key) { for (;;) { try { for (;;) {} } catch (e) {} } }`}, "k", false},
		{"operation sleeping", map[string]string{"callTimeout": "10m", "source": `function read(key) { sleep(1e9); }`}, "k", false},
		{"operation waiting for a runtime", map[string]string{"callTimeout": "10m", "runtimes": "1", "source": `function read(key) { for (;;) {} }`}, "k", true},
		{"close() spinning", map[string]string{"callTimeout": "300ms", "source": `function read(key) {} function close() { for (;;) {} }`}, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, _, err := driver.Open(context.Background(), Name, tt.values)
			if err != nil {
				t.Fatal(err)
			}
			opErr := make(chan error, 2)
			ops := 0
			if tt.key != "" {
				ops++
				go func() { _, err := d.Read(context.Background(), tt.key); opErr <- err }()
				for deadline := time.Now().Add(time.Minute); !busy(d.(*Driver)); {
					if time.Now().After(deadline) {
						t.Fatal("the operation did not start")
					}
					time.Sleep(time.Millisecond)
				}
				time.Sleep(50 * time.Millisecond) // well into the loop or sleep
			}
			if tt.queued {
				ops++
				go func() { _, err := d.Read(context.Background(), tt.key); opErr <- err }()
				time.Sleep(50 * time.Millisecond) // waiting for the one runtime
			}
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- d.Close() }()
			select {
			case err := <-closed:
				if tt.key == "" && (err == nil || !strings.Contains(err.Error(), "close ran past 300ms (callTimeout")) {
					t.Errorf("Close: %v; want close() reported as interrupted", err)
				}
			case <-time.After(time.Minute): // a patience: how soon is the machine's
				t.Fatal("Close did not return within a minute")
			}
			t.Logf("Close took %v", time.Since(start))
			for ; ops > 0; ops-- {
				select {
				case err := <-opErr:
					if err == nil || driver.Classify(err) != driver.ClassUnavailable {
						t.Errorf("operation in flight at Close: %v (class %v); want unavailable (driver closed)", err, driver.Classify(err))
					}
				case <-time.After(time.Minute):
					t.Fatal("an operation in flight did not end within a minute after Close")
				}
			}
		})
	}
}

// busy says whether some runtime of d runs an operation.
func busy(d *Driver) bool {
	g := d.cur.Load()
	g.allMu.Lock()
	defer g.allMu.Unlock()
	for _, v := range g.all {
		v.mu.Lock()
		active := v.active
		v.mu.Unlock()
		if active {
			return true
		}
	}
	return false
}

// TestMemoryLimit runs scripts that allocate without bound, in one call or a little in
// each call: the calls are stopped (class rejected, naming memoryLimit) while the heap is
// still small, the process (this test) lives on, and later calls run in fresh runtimes.
// The limit is small so the test's heap stays small.
func TestMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit string
		key   string
	}{
		// Arrays fill slowly in goja (about 1 s per million elements under -race on a
		// busy machine): small ones and the smallest limit keep the test short.
		{"arrays in one call", "8MiB", "arrays"},
		// Typed arrays are allocated at Go speed: the watchdog must keep up.
		{"typed arrays in one call", "64MiB", "typed"},
		{"kept across calls", "16MiB", "leak"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, map[string]string{"memoryLimit": tt.limit, "callTimeout": "1m", "source": `
var kept = [];
function init() { kept = []; }
function read(key) {
	if (key === "arrays") { let a = []; while (true) { a.push(new Array(1e5).fill(1)); } }
	if (key === "typed") { let a = []; while (true) { a.push(new Float64Array(1e5)); } }
	if (key === "leak") { kept.push(new Float64Array(1e5)); return "kept " + kept.length; }
	return "ok";
}
`})
			start := time.Now()
			deadline := start.Add(time.Minute) // a patience, as the loop after the stop's
			var err error
			for err == nil && time.Now().Before(deadline) {
				_, err = d.Read(context.Background(), tt.key)
			}
			if err == nil {
				t.Fatal("no call stopped within a minute")
			}
			t.Logf("stopped after %v: %v", time.Since(start), err)
			if driver.Classify(err) != driver.ClassRejected || !strings.Contains(err.Error(), "memoryLimit "+tt.limit) {
				t.Fatalf("%v (class %v); want rejected naming memoryLimit", err, driver.Classify(err))
			}
			if n := d.DriverStats()["memoryStops"]; n != 1 {
				t.Fatalf("memoryStops = %d, want 1", n)
			}
			// The runtimes are dropped and the heap measured again; then calls run.
			var v []byte
			for err != nil && time.Now().Before(deadline.Add(time.Second)) {
				v, err = d.Read(context.Background(), "x")
				if err != nil {
					if driver.Classify(err) != driver.ClassRejected {
						t.Fatalf("call after the stop: %v", err)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if err != nil || string(v) != "ok" {
				t.Fatalf("call after the stop: %q, %v; want ok", v, err)
			}
			if tt.key == "leak" {
				// A fresh runtime: what the old ones kept is gone.
				if v, err := d.Read(context.Background(), "leak"); err != nil || string(v) != "kept 1" {
					t.Fatalf("leak after the stop: %q, %v; want kept 1 (a fresh runtime)", v, err)
				}
			}
			if n := d.DriverStats()["memoryStops"]; n != 1 {
				t.Fatalf("memoryStops = %d after the stop, want 1 (the dropped runtimes' heap measured as gone)", n)
			}
			var closeErr error
			within(t, "Close after a memory stop", func() { closeErr = d.Close() })
			if closeErr != nil {
				t.Fatal(closeErr)
			}
		})
	}
}

// TestCloseDuringSpinningReload closes a driver while the watcher reloads a file whose
// init never returns: Close ends the reload rather than wait for initTimeout.
func TestCloseDuringSpinningReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.js")
	if err := os.WriteFile(file, []byte(`function read(key) { return "v1"; }`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _, err := driver.Open(context.Background(), Name, map[string]string{"file": file, "watch": "5ms"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`function init() { for (;;) {} } function read(key) { return "v2"; }`), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the watcher has seen it twice and is loading it
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("Close did not return within 4s (initTimeout is 30s)")
	}
	t.Logf("Close took %v", time.Since(start))
}
