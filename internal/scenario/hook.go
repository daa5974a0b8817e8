package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// outputGrace is how long a finished hook's output is waited for once its processes are
// killed: only a process that left the hook's group (setsid) can still hold the output
// open, and the hook's verdict does not wait for it.
const outputGrace = 100 * time.Millisecond

// runCommand runs a hook's command under sh in a process group of its own (a job object
// on Windows) and kills the whole group when the command exits, at the action's timeout,
// and when ctx ends: a fault injector it started in the background must not outlive the
// hook, nor ndbench, nor keep a CI job's step from ending.
func (a Action) runCommand(ctx context.Context, env []string) error {
	cmd := exec.Command("sh", "-c", a.Run)
	if env != nil {
		cmd.Env = env
	}
	// The output goes through a pipe handed to the command as a file: exec then copies
	// nothing and Wait returns when the command exits, whatever its children still hold
	// (with a buffer, Wait waits for every holder of the pipe and fails after WaitDelay).
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%q: output pipe: %w", a.Run, err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	setGroup(cmd)
	g, err := startHook(cmd)
	_ = pw.Close() // the hook's processes hold the write end now
	if err != nil {
		return fmt.Errorf("%q: %w", a.Run, err)
	}
	defer forget(g)
	out := &tailBuffer{max: 4096}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waitErr error
	var cut error // why ndbench ended the command, if it did
	select {
	case waitErr = <-exited:
		g.kill() // what the command left behind: the hook is over
	case <-ctx.Done():
		cut = ctx.Err()
		g.kill()
		waitErr = <-exited
	}
	select {
	case <-copied:
	case <-time.After(outputGrace):
	}

	switch {
	case errors.Is(cut, context.DeadlineExceeded):
		return fmt.Errorf("%q timed out after %s", a.Run, a.Timeout)
	case cut != nil:
		return fmt.Errorf("%q cancelled: %w", a.Run, cut)
	}
	code := 0
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return fmt.Errorf("%q: %w", a.Run, waitErr)
		}
		code = ee.ExitCode()
	}
	if code != a.ExpectExit {
		return fmt.Errorf("%q exited %d, expected %d: %s", a.Run, code, a.ExpectExit, tail(out.bytes()))
	}
	return nil
}

// running holds the process groups of the hook commands running now. They lead groups
// of their own, which a terminal's Ctrl-C does not reach: a process that is about to die
// (a second interrupt during the shutdown) kills them first (KillHooks), or a fault
// injector, an undo half done, would outlive it.
var running struct {
	sync.Mutex
	groups map[*procGroup]struct{}
	closed bool // KillHooks ran: no hook command starts any more
}

// errClosing is a hook command's error once ndbench is dying.
var errClosing = errors.New("not started: ndbench is exiting")

// startHook starts cmd and registers its process group, both under the registry's lock,
// so KillHooks never misses a command that started while it ran.
func startHook(cmd *exec.Cmd) (*procGroup, error) {
	running.Lock()
	defer running.Unlock()
	if running.closed {
		return nil, errClosing
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := newGroup(cmd.Process)
	if running.groups == nil {
		running.groups = map[*procGroup]struct{}{}
	}
	running.groups[g] = struct{}{}
	return g, nil
}

// forget unregisters g and releases it (under the lock, so KillHooks never kills a
// released group).
func forget(g *procGroup) {
	running.Lock()
	defer running.Unlock()
	delete(running.groups, g)
	g.release()
}

// KillHooks kills the processes of every hook command running now (their whole process
// groups, job objects on Windows) and keeps any other from starting, and returns how many
// groups it killed. It is for a process about to exit without waiting for its hooks: the
// command line calls it on a second interrupt.
func KillHooks() int {
	running.Lock()
	defer running.Unlock()
	running.closed = true
	for g := range running.groups {
		g.kill()
	}
	return len(running.groups)
}

// tailBuffer keeps the last max bytes written to it: a hook's output is only shown at
// the end of an error message, and a chatty command must not fill memory.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}
