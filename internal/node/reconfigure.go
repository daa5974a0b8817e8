package node

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/control"
)

// reconfigureTimeout bounds one Reconfigure call; the driver's context ends then.
const reconfigureTimeout = 30 * time.Second

// Reconfiguration states, in ReconfigureStatus.State.
const (
	ReconfigureApplied = "applied" // the driver runs with the live options of AppliedVersion
	ReconfigurePending = "pending" // a reconfiguration to PendingVersion is queued or running
	ReconfigureFailed  = "failed"  // the one to PendingVersion failed; the driver keeps AppliedVersion's
)

// ReconfigureStatus is where the connected driver's live options stand (see
// control.ReconfigureStatus).
type ReconfigureStatus = control.ReconfigureStatus

// reconfigurer applies live driver options for one driver session, one Reconfigure at a
// time, on its own goroutine: the config store's subscriber only queues. The fields
// below ctx are guarded by the Instance's mu.
type reconfigurer struct {
	inst *Node
	drv  driver.Reconfigurer
	name string

	ctx    context.Context // ends when the session closes; cancels a Reconfigure in flight
	cancel context.CancelFunc
	wake   chan struct{} // capacity 1: "want changed"
	done   chan struct{} // closed when the goroutine exits

	want    any    // options the driver should run with (latest queued, or applied)
	wantVer uint64 // config version of want
	taken   bool   // the goroutine has taken want (it is running or done)
	status  ReconfigureStatus
}

// startReconfigurer starts the reconfigurer of a driver initialised with opts. Called
// with mu held.
func (i *Node) startReconfigurer(d driver.Reconfigurer, name string, opts any) *reconfigurer {
	ctx, cancel := context.WithCancel(context.Background())
	r := &reconfigurer{inst: i, drv: d, name: name, ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		want: opts, taken: true, status: ReconfigureStatus{State: ReconfigureApplied}}
	go r.run()
	return r
}

// queue makes target (the options of config version ver) what the driver should run
// with, unless it already is what was last queued. A call still queued is replaced, so
// the driver goes straight to the newest options; one running is never overtaken. Called
// with mu held.
func (r *reconfigurer) queue(target any, ver uint64) {
	if maps.Equal(driver.Values(target, false), driver.Values(r.want, false)) {
		if r.status.State == ReconfigurePending && !r.taken {
			r.wantVer = ver
			r.status.PendingVersion = ver
		}
		return
	}
	r.want, r.wantVer, r.taken = target, ver, false
	r.status.State, r.status.PendingVersion, r.status.Error = ReconfigurePending, ver, ""
	select {
	case r.wake <- struct{}{}:
	default: // already woken; it will take the newest want
	}
}

// run applies queued options until the session closes.
func (r *reconfigurer) run() {
	defer close(r.done)
	mu := &r.inst.mu
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		}
		mu.Lock()
		if r.taken {
			mu.Unlock()
			continue
		}
		opts, ver := r.want, r.wantVer
		r.taken = true
		mu.Unlock()

		ctx, cancel := context.WithTimeout(r.ctx, reconfigureTimeout)
		err := r.drv.Reconfigure(ctx, opts)
		cancel()
		if r.ctx.Err() != nil {
			return // the session closed: nobody looks at this driver any more
		}

		mu.Lock()
		if err != nil {
			r.status.State, r.status.PendingVersion, r.status.Error = ReconfigureFailed, ver, driver.Shown(false, err.Error())
			r.inst.recordErr(fmt.Errorf("reconfigure driver %s to config version %d: %w", r.name, ver, err))
		} else {
			r.inst.drvOpts = opts
			r.status.AppliedVersion = ver
			if r.taken { // nothing newer queued meanwhile
				r.status.State, r.status.PendingVersion, r.status.Error = ReconfigureApplied, 0, ""
			}
		}
		// A failure leaves want as it was, so unrelated changes do not retry it; another
		// value, or the applied one set back, differs from it and is queued.
		mu.Unlock()
	}
}

// stop cancels a Reconfigure in flight and waits for the goroutine to end. Called
// without mu.
func (r *reconfigurer) stop() {
	r.cancel()
	<-r.done
}
