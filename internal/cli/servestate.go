package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/history"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/report"
)

// serveStateEvery is how often a serve notes its sign of life: a serve killed without a
// clean stop is known to have ended within this of its last note.
const serveStateEvery = time.Second

// serveState is what a running serve keeps on disk about itself, so the serve after it
// on the same address can say what was lost when it did not stop cleanly (kill -9, a
// crash, a power cut): nothing of a driver session is recorded before it ends.
type serveState struct {
	PID          int       `json:"pid"`
	Listen       string    `json:"listen"`
	Started      time.Time `json:"started"`
	LastSeen     time.Time `json:"lastSeen"`
	Driver       string    `json:"driver,omitempty"`
	SessionSince time.Time `json:"sessionSince,omitzero"`
	Running      []string  `json:"running,omitempty"`
	// Panic is the value serve's own goroutine panicked with, when that is how it ended.
	Panic string `json:"panic,omitempty"`
}

// serveStatePath is where the serve listening on listen keeps its state: beside the
// default results store (whatever --results says, which may be a database elsewhere),
// one file per address; "" when there is no such place or the port is chosen at random.
func serveStatePath(env []string, listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "0" {
		return ""
	}
	var own []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, history.EnvResults+"=") {
			own = append(own, kv)
		}
	}
	t, err := history.DefaultTarget(own)
	if err != nil {
		return ""
	}
	name := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, host+"_"+port)
	return filepath.Join(filepath.Dir(t), "serve-"+name+".state.json")
}

// readPreviousServe returns what the serve before this one left at path: nil when it
// stopped cleanly (it removes its state) or never ran.
func readPreviousServe(path string) (*api.PreviousServe, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the previous serve's state: %w", err)
	}
	var st serveState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("read the previous serve's state %s: %w", path, err)
	}
	p := &api.PreviousServe{PID: st.PID, Started: st.Started, LastSeen: st.LastSeen, Driver: st.Driver, SessionSince: st.SessionSince, Running: st.Running, Panic: st.Panic}
	p.Message = previousServeMessage(st)
	return p, nil
}

// previousServeMessage says in a sentence what a serve that ended without a clean stop
// lost.
func previousServeMessage(st serveState) string {
	at := st.LastSeen.UTC().Format(time.RFC3339)
	msg := fmt.Sprintf("the previous serve (pid %d, started %s) ended without a clean stop at %s (its last sign of life)",
		st.PID, st.Started.UTC().Format(time.RFC3339), at)
	if st.Panic != "" {
		msg = fmt.Sprintf("the previous serve (pid %d, started %s) ended in a panic at %s (%s)",
			st.PID, st.Started.UTC().Format(time.RFC3339), at, st.Panic)
	}
	if st.Driver == "" {
		return msg + "; it had no driver session open, so no run was lost"
	}
	span := st.LastSeen.Sub(st.SessionSince).Round(time.Second)
	load := "no load running"
	if len(st.Running) > 0 {
		load = "running " + strings.Join(st.Running, ", ")
	}
	return msg + fmt.Sprintf("; its driver session (%s, since %s, %s) had no report and was not recorded in the results history: its %v of figures were lost",
		st.Driver, st.SessionSince.UTC().Format(time.RFC3339), load, span)
}

// maxPanicNote bounds the panic value a state note keeps: it is shown in the next serve's
// status and log, and a value may be as long as whatever was formatted into it.
const maxPanicNote = 300

// keepServeState notes this serve's state at path every serveStateEvery until ctx ends
// or the returned function is called. Called with nil (a clean stop), it removes the note:
// nothing was lost. Called with the value serve's goroutine panicked with (what recover
// returned), it writes a last note saying so and keeps it, so the next serve reports the
// crash: the deferred calls that run during a panic would otherwise stop it as cleanly as
// a normal return does.
// Each note is written whole (temporary file, fsync, rename): a kill mid-write leaves the
// last note.
func keepServeState(ctx context.Context, path, listen string, inst *node.Node, log *slog.Logger) (end func(panicked any)) {
	if path == "" {
		return func(any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	st := serveState{PID: os.Getpid(), Listen: listen, Started: time.Now()}
	note := func() error {
		s := inst.Status()
		st.LastSeen, st.Driver, st.SessionSince, st.Running = time.Now(), s.Driver, s.Since, nil
		for cls, on := range s.Running {
			if on {
				st.Running = append(st.Running, cls)
			}
		}
		slices.Sort(st.Running)
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return report.WriteFileAtomic(path, func(w io.Writer) error { _, err := w.Write(b); return err })
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		err = note()
		if err != nil {
			log.Warn("serve cannot note its state; a restart will not say what a crash lost", "err", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(serveStateEvery)
		defer t.Stop()
		warned := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := note(); err != nil && !warned {
					warned = true
					log.Warn("serve cannot note its state; a restart will not say what a crash lost", "err", err)
				}
			}
		}
	}()
	return func(panicked any) {
		cancel()
		<-done
		if panicked == nil {
			_ = os.Remove(path)
			return
		}
		st.Panic = fmt.Sprint(panicked)
		if len(st.Panic) > maxPanicNote {
			st.Panic = st.Panic[:maxPanicNote] + "…"
		}
		_ = note()
	}
}
