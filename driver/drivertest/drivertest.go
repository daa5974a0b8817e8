// Package drivertest is the conformance suite of ndbench drivers: one call, Run, checks
// that a driver keeps the contract of package driver against its real store. Every bundled
// driver runs it in its tests, and a third-party driver runs it the same way, since the
// suite imports nothing from ndbench but package driver:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, drivertest.Harness{
//			Name:       "mystore",
//			Options:    map[string]string{"addrs": testServerAddr},
//			LiveValues: map[string]string{"ttl": "1h"},
//		})
//	}
//
// The checks, each a subtest named by one of the Check constants:
//
//   - values round-trip byte-exact at several sizes (all 256 byte values included), an
//     overwrite returns the latest value, and a key never written is driver.ErrNotFound;
//   - Write does not keep the caller's buffer, which the engine reuses at once;
//   - 16 goroutines reading and writing overlapping keys (run it under -race) only ever
//     read values that were written to that key;
//   - bulk reads and writes, when the driver offers them, agree with Read and Write;
//   - a driver that gives pipelines (driver.Pipeliner) completes every operation of a
//     batch once, in order, with what Read and Write would give, and rides out a stale
//     Interrupt;
//   - an already-cancelled context fails an operation promptly, and a cancelled write
//     never reaches the store; a deadline on a store that stopped answering (when the
//     harness can pause the server) fails an operation promptly too;
//   - every option marked live changes through Reconfigure, and the driver still works;
//   - operations on a closed driver fail without panicking;
//   - during an outage (when the harness can stop and start the server) failures are
//     classified unavailable or timeout, no operation hangs, and the driver recovers
//     once the server is back, without being reopened.
//
// The suite writes keys under a random prefix and never deletes them; point it at a
// database, table or keyspace that tests may fill.
//
// Beside the suite, the package holds what a driver's own tests repeat: Open (a driver
// over the test server's options, closed when the test ends), Context (a bounded context
// for a test's operations) and Corruption (value validation catches a value changed in
// the store).
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// The checks Run performs, in order. Each runs as a subtest of this name, and Harness.Skip
// takes these names.
const (
	CheckReadYourWrite    = "ReadYourWrite"    // values round-trip byte-exact at several sizes
	CheckOverwrite        = "Overwrite"        // a read returns the latest write
	CheckNotFound         = "NotFound"         // a key never written is driver.ErrNotFound
	CheckValueBufferReuse = "ValueBufferReuse" // Write does not keep the caller's buffer
	CheckBulk             = "Bulk"             // BulkWriter and BulkReader agree with Write and Read
	CheckConcurrentUse    = "ConcurrentUse"    // 16 goroutines on overlapping keys
	CheckCancelledContext = "CancelledContext" // a cancelled context fails an operation promptly
	CheckPipeline         = "Pipeline"         // a Pipeliner completes each op of a batch once, agreeing with Read and Write
	CheckDeadlineOnStall  = "DeadlineOnStall"  // a deadline ends an operation on a paused server
	CheckLiveReconfigure  = "LiveReconfigure"  // every live option changes through Reconfigure
	CheckClosed           = "Closed"           // operations after Close fail without panicking
	CheckWarm             = "Warm"             // a Warmer's connections serve the workers' pipelines
	CheckOutage           = "Outage"           // failures are classified; the driver recovers
)

// Checks lists every check in the order Run performs them.
var Checks = []string{
	CheckReadYourWrite, CheckOverwrite, CheckNotFound, CheckValueBufferReuse, CheckBulk,
	CheckConcurrentUse, CheckCancelledContext, CheckPipeline, CheckDeadlineOnStall, CheckLiveReconfigure,
	CheckClosed, CheckWarm, CheckOutage,
}

// Harness tells the suite how to reach a driver's store and what the store can do.
type Harness struct {
	// Name is the name the driver registers under (driver.MustRegister in its init), so
	// the package defining the driver must be imported by the test.
	Name string
	// Options are the option values of every driver the suite opens, over the driver's
	// defaults: the test server's address, credentials, a table of the suite's own.
	// The suite opens drivers with driver.Open and builds the options it passes to
	// Reconfigure from these values too.
	Options map[string]string
	// LiveValues holds, for every option marked live in the driver's schema, a second
	// valid value that differs from its value in Options (or its default). The suite
	// switches each one through Reconfigure and back. An option marked live without an
	// entry fails the suite, so a new live option cannot go untested.
	LiveValues map[string]string
	// MaxValueSize is the largest value in bytes the store accepts. Values of 0, 1, 100,
	// 256 bytes, 64 KiB and 1 MiB are checked, those above MaxValueSize replaced by one of
	// exactly MaxValueSize. 0 means at least 1 MiB.
	MaxValueSize int
	// NoEmptyValues is set for a store that cannot hold a value of zero bytes; the suite
	// then does not write one. By default it does, and expects it back as an empty value
	// that is distinct from a miss.
	NoEmptyValues bool
	// Pause, when set, freezes the server so that it keeps its connections open and
	// answers nothing (a stalled store, e.g. SIGSTOP), returning a function that thaws
	// it. The DeadlineOnStall check needs it and is skipped without it.
	Pause func() (resume func(), err error)
	// Outage, when set, lets the suite stop and start the server. The Outage check needs
	// it and is skipped without it. It runs last, since it restarts the server.
	Outage *Outage
	// Skip names checks the driver cannot pass, each with the reason, which the suite
	// reports when it skips the check. Use it for what the store cannot do, or for a known
	// defect until it is fixed (say so in the reason): a skipped check is a gap in what
	// users can rely on.
	Skip map[string]string
	// Children holds the option values of each child of a driver built from others
	// (driver.Composer, like the composite driver), by driver reference. The suite
	// decodes every option set with driver.NewComposedOptions.
	Children map[string]map[string]string
}

// decode decodes the driver's options from vals, and its children's from
// Harness.Children.
func (s *suite) decode(vals map[string]string) (any, error) {
	all := make(map[string]map[string]string, len(s.h.Children)+1)
	for ref, v := range s.h.Children {
		all[ref] = v
	}
	all[s.h.Name] = vals
	return driver.NewComposedOptions(s.h.Name, all)
}

// Outage is how the suite takes a store down and brings it back.
type Outage struct {
	// Stop takes the store down abruptly, as a crash would (SIGKILL to the server):
	// connections break and new ones are refused.
	Stop func() error
	// Start brings the store back on the same address and returns once it serves
	// again. ctx bounds the wait.
	Start func(ctx context.Context) error
	// RecoverWithin bounds the time from Start's return until the driver, still the one
	// opened before Stop, serves operations again. 0 means 30 s.
	RecoverWithin time.Duration
	// OpTimeout is the deadline of each operation during the check; no operation may
	// take much longer, dead server or not. 0 means 2 s.
	OpTimeout time.Duration
	// Options are extra option values for the driver the check opens, over
	// Harness.Options: typically socket timeouts shorter than OpTimeout.
	Options map[string]string
}

// Limits the suite holds drivers to.
const (
	// opTimeout bounds every operation of the data checks; none should come near it on
	// a test server, it only turns a hang into a failure.
	opTimeout = 30 * time.Second
	// openTimeout bounds driver.Open (a JVM-based store may take a while to accept a
	// new session's schema checks).
	openTimeout = time.Minute
	// closeTimeout bounds Close.
	closeTimeout = 20 * time.Second
	// prompt is how soon an operation must give up once its context is done. It allows
	// for scheduling on a loaded machine, not for work the driver does after the fact.
	prompt = time.Second
)

// suite is one Run: the harness and what Run derived from it.
type suite struct {
	h      Harness
	prefix string // of every key the suite writes, unique per Run
	seq    int    // numbers keys within the Run
}

// Run runs every check against driver h.Name and fails t for each broken rule, naming
// it. The driver's store must be up; the suite opens and closes its own drivers.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h, prefix: fmt.Sprintf("drivertest-%08x-", rand.Uint32())}
	if err := s.checkHarness(); err != nil {
		t.Fatalf("drivertest harness for driver %q: %v", h.Name, err)
	}
	shared := s.open(t, nil)
	data := []struct {
		name string
		run  func(*testing.T, driver.Driver)
	}{
		{CheckReadYourWrite, s.readYourWrite},
		{CheckOverwrite, s.overwrite},
		{CheckNotFound, s.notFound},
		{CheckValueBufferReuse, s.valueBufferReuse},
		{CheckBulk, s.bulk},
		{CheckConcurrentUse, s.concurrentUse},
		{CheckCancelledContext, s.cancelledContext},
		{CheckPipeline, s.pipeline},
	}
	for _, c := range data {
		t.Run(c.name, func(t *testing.T) {
			s.skipIfAsked(t, c.name)
			c.run(t, shared)
		})
	}
	// These open drivers of their own: they reconfigure, close or break them.
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{CheckDeadlineOnStall, s.deadlineOnStall},
		{CheckLiveReconfigure, s.liveReconfigure},
		{CheckClosed, s.closed},
		{CheckWarm, s.warm},
		{CheckOutage, s.outage},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.skipIfAsked(t, c.name)
			c.run(t)
		})
	}
}

// checkHarness reports harness mistakes before any check runs, so they are not mistaken
// for driver defects.
func (s *suite) checkHarness() error {
	if _, ok := driver.Lookup(s.h.Name); !ok {
		return fmt.Errorf("%w (import the driver's package in the test so its init registers it)", driver.UnknownDriverError(s.h.Name))
	}
	if _, err := s.decode(s.h.Options); err != nil {
		return fmt.Errorf("field Options: %w", err)
	}
	if s.h.MaxValueSize < 0 {
		return fmt.Errorf("field MaxValueSize %d: want 0 (1 MiB or more) or the store's limit in bytes", s.h.MaxValueSize)
	}
	for name := range s.h.Skip {
		if !slices.Contains(Checks, name) {
			return fmt.Errorf("field Skip names %q, which is not a check; checks are %s", name, strings.Join(Checks, ", "))
		}
	}
	if o := s.h.Outage; o != nil && (o.Stop == nil || o.Start == nil) {
		return errors.New("field Outage needs both Stop and Start")
	}
	return nil
}

func (s *suite) skipIfAsked(t *testing.T, check string) {
	t.Helper()
	if why, ok := s.h.Skip[check]; ok {
		t.Skipf("skipped by the harness: %s", why)
	}
}

// key returns a key no earlier Run or check has used, with what in it to help a reader
// of the store find which check wrote it.
func (s *suite) key(what string) string {
	s.seq++
	return fmt.Sprintf("%s%s-%d", s.prefix, what, s.seq)
}

// values merges option values, later maps winning.
func values(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range layers {
		maps.Copy(out, m)
	}
	return out
}

// openUnmanaged opens a driver with Harness.Options and extra on top; the caller closes it.
func (s *suite) openUnmanaged(t *testing.T, extra map[string]string) driver.Driver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	// The option values are not shown: they may hold a password.
	opts, err := s.decode(values(s.h.Options, extra))
	if err != nil {
		t.Fatalf("open driver %s: %v", s.h.Name, err)
	}
	def, _ := driver.Lookup(s.h.Name)
	d := def.New()
	if err := d.Init(ctx, opts); err != nil {
		_ = d.Close()
		t.Fatalf("open driver %s: init: %v", s.h.Name, err)
	}
	return d
}

// open opens a driver that is closed when the test ends; a Close that fails or hangs
// fails the test.
func (s *suite) open(t *testing.T, extra map[string]string) driver.Driver {
	t.Helper()
	d := s.openUnmanaged(t, extra)
	t.Cleanup(func() {
		if err := closeWithin(d, closeTimeout); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// errCloseHangs is the error of closeWithin for a Close that did not return in time.
var errCloseHangs = errors.New("did not return")

// closeWithin closes d, giving up on a Close that does not return within limit.
func closeWithin(d driver.Driver, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- d.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		return fmt.Errorf("%w within %v; Close must release everything promptly, also after a failure of the store", errCloseHangs, limit)
	}
}

// opContext returns the context of one operation. As in the engine, each operation has
// its own, cancelled once the call has returned.
func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

func write(d driver.Driver, key string, value []byte) error {
	ctx, cancel := opContext()
	defer cancel()
	return d.Write(ctx, key, value)
}

func read(d driver.Driver, key string) ([]byte, error) {
	ctx, cancel := opContext()
	defer cancel()
	return d.Read(ctx, key)
}

// pattern returns n pseudo-random bytes fixed by seed. A value of 256 bytes holds every
// byte value exactly once, so a driver that mangles any byte (NUL, CR LF, invalid UTF-8)
// cannot pass.
func pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	if n == 256 {
		for i, p := range r.Perm(256) {
			b[i] = byte(p)
		}
		return b
	}
	for i := 0; i < n; i += 8 {
		x := r.Uint64()
		for j := i; j < min(i+8, n); j++ {
			b[j] = byte(x)
			x >>= 8
		}
	}
	return b
}

// diff describes how got differs from want, for a failure message.
func diff(got, want []byte) string {
	if got == nil && want != nil {
		return fmt.Sprintf("got nil, want %d bytes", len(want))
	}
	n := min(len(got), len(want))
	for i := 0; i < n; i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("got %d bytes, want %d; first difference at byte %d: got 0x%02x, want 0x%02x", len(got), len(want), i, got[i], want[i])
		}
	}
	return fmt.Sprintf("got %d bytes, want %d; the shorter is a prefix of the longer", len(got), len(want))
}
