package node

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

var (
	validatorSeed = flag.Uint64("validator.seed", 0, "TestOneValidator: the seed of the first sequence (0: from the clock)")
	validatorSeqs = flag.Int("validator.sequences", 1000, "TestOneValidator: how many sequences to run")
)

// memops is the memory driver with one more operation, lookup, so that op mixes are valid
// for one driver and not for another.
const memops = "memops"

type memopsDriver struct{ driver.Driver }

func (d memopsDriver) Do(ctx context.Context, _ int, key string, _ []byte) ([]byte, error) {
	return d.Read(ctx, key)
}

func init() {
	mem, ok := driver.Lookup("memory")
	if !ok {
		panic("the memory driver is not registered")
	}
	if err := driver.Register(driver.Definition{Name: memops, Summary: "memory with a lookup operation (node tests)",
		NewOptions: mem.NewOptions, New: func() driver.Driver { return memopsDriver{mem.New()} },
		Operations: []driver.Operation{{Name: "lookup", Kind: driver.KindRead, Help: "a read by another name"}}}); err != nil {
		panic(err)
	}
}

// TestOneValidator holds the bar of the one validator: a change that is accepted is
// applied, whatever the driver's state, and one that is refused changes nothing. Random
// sequences, each from its own seed, of PATCHes (valid and not: rates, workers, op mixes
// valid for one driver only, pipelining, classes, driver.name), a source replacing its
// layer (classes added and removed), driver inits and shutdowns, starts and stops; after
// every step, the engine runs exactly the effective configuration's workload, nothing is
// recorded as failing to apply, and driver.name is pending exactly when it names another
// driver than the connected one. A refused change answers with field errors (a 4xx) and
// leaves the configuration's version and the engine's workload as they were.
//
// A failure prints the sequence's seed; -args -validator.seed=SEED -validator.sequences=1
// replays it.
func TestOneValidator(t *testing.T) {
	base := *validatorSeed
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	n := *validatorSeqs
	if testing.Short() {
		n = min(n, 200)
	}
	for k := range n {
		seed := base + uint64(k)
		if trace, err := validatorSequence(seed); err != nil {
			t.Fatalf("sequence with seed %d: %v\nsteps:\n  %s\nreplay: go test -race -count=1 -run 'TestOneValidator$' ./internal/node/ -args -validator.seed=%d -validator.sequences=1",
				seed, err, strings.Join(trace, "\n  "), seed)
		}
	}
}

// validatorSequence runs one random sequence and returns its steps and the first broken
// invariant.
func validatorSequence(seed uint64) (trace []string, err error) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	// Enough class names that a node's 32 statistics series can run out.
	class := func() string { return fmt.Sprintf("c%d", r.IntN(16)) }
	mix := func() string {
		return pick("read", "write", "read:1,write:1", "read:3,lookup:1", "lookup", "write:1,lookup:2", "nosuch", "read:0")
	}

	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory", "workload.readRate=1",
		"workload.writeRate=1", "workload.numKeys=100", "workload.numValues=10", "workload.readers=1", "workload.writers=1"}})
	if err != nil {
		return nil, err
	}
	store := config.NewStore(snap)
	i := New(store, nil)
	defer func() { _ = i.Close() }()
	ctx := context.Background()

	for step := range 14 {
		before := store.Current()
		wBefore, connBefore := i.Workload()
		var desc string
		var stepErr error
		changes := true // the step changes configuration when it succeeds
		switch a := r.IntN(10); {
		case a < 4:
			vals := map[string]string{}
			for range 1 + r.IntN(3) {
				switch r.IntN(9) {
				case 0:
					vals["workload.readRate"] = pick("0", "1", "2.5", "-5", "abc")
				case 1:
					vals["workload.readers"] = pick("1", "2", "0", "-1")
				case 2:
					vals["workload.readMix"] = mix()
				case 3:
					vals["workload.writeEnabled"] = pick("true", "false", "maybe")
				case 4:
					vals["workload.pipeline"] = pick("1", "1", "4")
				case 5:
					vals["driver.name"] = pick("memory", memops, "nosuch")
				case 6:
					c := class()
					vals["workload.ops."+c+".mix"] = mix()
					vals["workload.ops."+c+".rate"] = pick("1", "1", "-1")
				case 7:
					vals["workload.ops."+class()+".enabled"] = pick("true", "false")
				case 8:
					vals["workload.numKeys"] = pick("100", "1000", "0")
				}
			}
			desc = fmt.Sprintf("PATCH %v", vals)
			_, stepErr = i.Patch(vals)
		case a < 5:
			// A source (a watched file, etcd) replaces its whole layer: classes it had
			// and no longer has are removed.
			vals := map[string]string{}
			for range r.IntN(4) {
				c := class()
				vals["workload.ops."+c+".mix"] = mix()
				vals["workload.ops."+c+".workers"] = "1"
			}
			desc = fmt.Sprintf("etcd layer %v", vals)
			_, stepErr = store.SetLayer(config.Layer{Name: config.LayerEtcd, Source: "etcd", Values: vals})
		case a < 7:
			if r.IntN(3) == 0 {
				desc = "init (configured)"
				stepErr = i.InitConfigured(ctx)
			} else {
				name := pick("memory", memops)
				desc = "init " + name
				stepErr = i.Init(ctx, name, nil)
			}
		case a < 8:
			desc, changes = "shutdown", false
			stepErr = i.Shutdown()
		case a < 9:
			classes := []string{}
			if r.IntN(2) == 0 {
				classes = append(classes, pick("read", "write", class()))
			}
			desc, changes = fmt.Sprintf("start %v", classes), false
			stepErr = i.Start(classes...)
		default:
			desc, changes = "stop", false
			stepErr = i.Stop()
		}
		if stepErr != nil {
			desc += fmt.Sprintf(" → refused: %v", stepErr)
		} else {
			desc += " → ok"
		}
		trace = append(trace, desc)

		cur := store.Current()
		st := i.Status()
		w, conn := i.Workload()
		if conn && !reflect.DeepEqual(w, cur.Config.Workload) {
			return trace, fmt.Errorf("step %d: the engine runs\n%+v\nwhile the configuration (version %d) says\n%+v", step, w, cur.Version, cur.Config.Workload)
		}
		if st.LastError != nil {
			return trace, fmt.Errorf("step %d: an accepted change failed to apply: %s", step, st.LastError.Message)
		}
		if pend := slices.Contains(st.Pending, "driver.name"); conn && pend != (cur.Config.DriverName != st.Driver) {
			return trace, fmt.Errorf("step %d: driver %s connected, driver.name=%s, pending %v", step, st.Driver, cur.Config.DriverName, st.Pending)
		}
		if stepErr == nil || !changes {
			continue
		}
		// Refused: nothing changed, and the answer names the fields (a 4xx), except for
		// an init whose driver is unknown or failed to connect.
		if cur.Version != before.Version {
			return trace, fmt.Errorf("step %d: refused, yet the configuration moved from version %d to %d", step, before.Version, cur.Version)
		}
		if conn != connBefore || conn && !reflect.DeepEqual(w, wBefore) {
			return trace, fmt.Errorf("step %d: refused, yet the engine changed (connected %v → %v)", step, connBefore, conn)
		}
		if _, ok := driver.AsFieldErrors(stepErr); !ok && !strings.HasPrefix(desc, "init") {
			return trace, fmt.Errorf("step %d: refused without field errors (not a 4xx): %v", step, stepErr)
		}
	}
	return trace, nil
}

// TestChangesTheConnectedDriverCannotRunAreRefused: the cases the store used to accept and
// the engine then refused, only logging it. Each is refused with the field at fault, and
// nothing changes.
func TestChangesTheConnectedDriverCannotRunAreRefused(t *testing.T) {
	classes := func(from, to int) map[string]string {
		vals := map[string]string{}
		for k := from; k < to; k++ {
			vals[fmt.Sprintf("workload.ops.c%d.mix", k)] = "read:1,write:1" // 3 series each
		}
		return vals
	}
	tests := []struct {
		name    string
		before  []map[string]string // accepted changes first
		change  map[string]string
		field   string
		allowed string
	}{
		{name: "a mix only the pending driver offers",
			change: map[string]string{"driver.name": memops, "workload.readMix": "read:1,lookup:1"},
			field:  "workload.readMix", allowed: "driver memory is connected and runs the workload until driver.name=memops is initialized"},
		{name: "a mix for a driver selected earlier",
			before: []map[string]string{{"driver.name": memops}},
			change: map[string]string{"workload.ops.c0.mix": "lookup"},
			field:  "workload.ops.c0.mix", allowed: "operations of the connected driver: read, write"},
		{name: "classes past the node's 32 series, after others were removed",
			before: []map[string]string{classes(0, 8), {}},
			change: classes(8, 16),
			field:  "workload.ops", allowed: "at most 32 statistics series per node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := newInstance(t)
			if err := i.Init(context.Background(), "memory", nil); err != nil {
				t.Fatal(err)
			}
			// Classes come and go through a source that replaces its layer (etcd).
			apply := func(vals map[string]string) error {
				if strings.HasPrefix(tc.name, "classes") {
					_, err := i.Store().SetLayer(config.Layer{Name: config.LayerEtcd, Source: "etcd", Values: vals})
					return err
				}
				_, err := i.Patch(vals)
				return err
			}
			for _, b := range tc.before {
				if err := apply(b); err != nil {
					t.Fatalf("accepted change %v: %v", b, err)
				}
			}
			ver := i.Config().Version
			w0, _ := i.Workload()
			err := apply(tc.change)
			fes, ok := driver.AsFieldErrors(err)
			if !ok || fes[0].Field != tc.field || !strings.Contains(fes[0].Allowed, tc.allowed) {
				t.Fatalf("change %v: %v; want a field error on %s with %q", tc.change, err, tc.field, tc.allowed)
			}
			if w, _ := i.Workload(); i.Config().Version != ver || !reflect.DeepEqual(w, w0) {
				t.Errorf("a refused change moved the configuration (version %d → %d) or the engine", ver, i.Config().Version)
			}
			if le := i.Status().LastError; le != nil {
				t.Errorf("last error %q", le.Message)
			}
		})
	}
}

// TestInitRefusesAConfigurationItsDriverCannotRun: a configuration accepted with no
// driver connected, which the store checks alone, that the node cannot run when a driver
// connects (more statistics series than the node has room for: a first session
// registered eight mixed classes, which the source then replaced by three others) fails
// the init, naming the key, and leaves the configuration and the node as they were.
func TestInitRefusesAConfigurationItsDriverCannotRun(t *testing.T) {
	i := newInstance(t)
	layer := func(prefix string, n int) error {
		vals := map[string]string{}
		for k := range n {
			vals[fmt.Sprintf("workload.ops.%s%d.mix", prefix, k)] = "read:1,write:1"
		}
		_, err := i.Store().SetLayer(config.Layer{Name: config.LayerEtcd, Source: "etcd", Values: vals})
		return err
	}
	if err := layer("c", 8); err != nil {
		t.Fatal(err)
	}
	if err := i.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	if err := i.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := layer("d", 3); err != nil {
		t.Fatalf("with no driver connected, the store checks the workload alone: %v", err)
	}
	ver := i.Config().Version
	err := i.Init(context.Background(), "memory", nil)
	fes, ok := driver.AsFieldErrors(err)
	if !ok || fes[0].Field != "workload.ops" || !strings.Contains(err.Error(), "init driver memory") {
		t.Fatalf("init: %v; want a field error on workload.ops", err)
	}
	if st := i.Status(); st.Initialized || i.Config().Version != ver {
		t.Errorf("a refused init left the driver connected (%v) or moved the configuration (version %d → %d)", st.Initialized, ver, i.Config().Version)
	}
}
