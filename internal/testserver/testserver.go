// Package testserver starts real data stores (Redis, Memcached, PostgreSQL, Cassandra,
// DynamoDB Local, Elasticsearch, OpenSearch, Gremlin Server, Geode), twemproxy in front of
// several of them, nginx, and small key-value HTTP and gRPC services of our own on
// loopback for integration tests, and stops them by PID.
//
// Each server gets free ports and a fresh data directory, runs as a direct child of the test
// binary (so the harness knows its real PID and the kernel kills it if the test binary dies),
// writes its output to Dir/server.log, and is ready only once it answers its own protocol.
// Binaries come from scripts/install-test-deps.sh; when one is missing, the start error says
// to run that script, and the test fails rather than skips.
//
// Starting servers needs Linux (process groups, a parent-death signal and /proc, see
// proc_linux.go). The package compiles everywhere so that the integration tests are
// type-checked for every target; elsewhere every start fails with an error that says so.
//
// Typical use, one server per test package:
//
//	var srv *testserver.Server
//
//	func TestMain(m *testing.M) {
//		os.Exit(testserver.Main(m, testserver.Redis, func(s *testserver.Server) { srv = s }))
//	}
package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Host is the address test servers bind to and tests talk to, but for a server run in a
// network namespace of its own (NdbenchIn).
const Host = "127.0.0.1"

// installHint is appended to errors about missing binaries so the fix is one command away.
const installHint = "run scripts/install-test-deps.sh (as root) to install the test servers"

// serverJIT stops the test JVMs' JIT at C1. A server's start is mostly compilation, and
// C2's compiler threads took most of it (a Cassandra start: 13.5 s of CPU with both
// compilers, 7.6 s with C1 alone and the serial GC), while the tests' short runs never
// reach the steady state where C2's code would pay that back. The integration stage is
// CPU-bound on the CI's 2 cores; the whole packages' CPU fell from 116 to 69 s
// (drivers/cassandra), 166 to 120 s (drivers/elasticsearch, means of noisy runs), 70 to
// 57 s (drivers/geode) and 42 to 25 s (drivers/gremlin) (docs/performance.md, "CI time",
// stop 53). Not in a process that runs benchmarks (see benchRequested), except DynamoDB Local's, whose
// documented figures were measured with C1.
const serverJIT = "-XX:TieredStopAtLevel=1"

// jit is the JIT flag of a test server's JVM: serverJIT, or for benchmarks the default
// (a harmless flag, so that the argument lists need no second form).
func jit() string {
	if benchmarking {
		return "-XX:+TieredCompilation"
	}
	return serverJIT
}

// benchmarking is whether this test process was asked to run benchmarks. Their servers
// start as before, with both JIT compilers and their usual collector, so that the figures
// in docs/performance.md (server CPU per operation, ndbench against latte on Cassandra)
// stay comparable. Read from the arguments, not the flag: TestMain starts the servers
// before the testing flags are parsed.
var benchmarking = benchRequested(os.Args[1:])

// benchRequested reports whether args hold a -test.bench (or -bench) flag with a pattern.
func benchRequested(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "test.bench" && name != "bench") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return value != ""
	}
	return false
}

// Server is a running (or killed) data-store process started by this package.
type Server struct {
	// Name is the store's name: "redis", "memcached", "postgres", "cassandra", "nginx",
	// "kvhttp", ...
	Name string
	// Host is 127.0.0.1, or the address of the network namespace a server runs in
	// (NdbenchIn).
	Host string
	// Port is the client port (CQL native port for Cassandra).
	Port int
	// Dir is the server's private directory: data, config files and server.log.
	Dir string
	// Ports holds the server's other ports by purpose (Cassandra: "storage", "ssl_storage").
	Ports map[string]int

	spec spec

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current process has been reaped
	stopped bool
}

// spec is what differs between stores: how to prepare the directory once, how to build the
// command, how to tell it is ready and how to ask it to stop.
type spec struct {
	// prepare runs once before the first start (initdb, config files).
	prepare func(ctx context.Context, s *Server) error
	// command builds the server command; the harness adds output, process group and death signal.
	command func(s *Server) (*exec.Cmd, error)
	// ready returns nil once the server answers its protocol on addr.
	ready func(ctx context.Context, addr string) error
	// readyTimeout is how long a start may go without progress (its log not growing)
	// before it fails; readyCap of them bound the whole wait.
	readyTimeout time.Duration
	// stopSignal asks for a clean shutdown (SIGTERM unless the store wants another).
	stopSignal syscall.Signal
	// stopTimeout bounds the wait for a clean shutdown before SIGKILL.
	stopTimeout time.Duration
	// extraPorts names ports to allocate besides Port.
	extraPorts []string
	// runAs, when set, runs the server as another user (stores that refuse root).
	runAs *account
	// host is the address the server listens on; "" is Host (loopback).
	host string
}

// account is a user to run a server as, in numeric form.
type account struct{ uid, gid uint32 }

// Addr returns "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// DSN returns a connection URL for PostgreSQL (trust auth, user postgres) and "" for other stores.
func (s *Server) DSN() string {
	if s.Name != "postgres" {
		return ""
	}
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", s.Addr())
}

// PID returns the process id of the running server, or 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return 0
	}
	return s.cmd.Process.Pid
}

// LogPath returns the file that holds the server's output across restarts.
func (s *Server) LogPath() string { return filepath.Join(s.Dir, "server.log") }

// LogTail returns the last lines of the server's output, for failure messages.
func (s *Server) LogTail() string { return tailFile(s.LogPath(), 40, 4096) }

// Kill stops the server abruptly with SIGKILL (to its whole process group, so a store with
// helper processes goes down at once), as an outage test wants. Dir and Port are kept, so
// Restart brings the same server back. Killing a server that is not running is a no-op.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return nil
	}
	return s.killLocked()
}

// Restart starts the server again on the same port and directory and waits until it is
// ready. A running server is first stopped cleanly, so Restart also works as a plain restart.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("restart %s on %s: server was stopped and its directory removed", s.Name, s.Addr())
	}
	if s.runningLocked() {
		if err := s.terminateLocked(); err != nil {
			return fmt.Errorf("restart %s on %s: %w", s.Name, s.Addr(), err)
		}
	}
	// The old process may hold the port for a moment after it dies (its sockets close
	// asynchronously), so a failed bind is retried until the readiness deadline.
	deadline := time.Now().Add(s.spec.readyTimeout)
	for {
		err := s.startLocked(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errBind) || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("restart %s on %s: %w", s.Name, s.Addr(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart %s on %s: %w", s.Name, s.Addr(), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop shuts the server down (its clean-shutdown signal, then SIGKILL after a bounded wait)
// and removes Dir. It is idempotent, and safe on a killed server.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	if s.runningLocked() {
		if err := s.terminateLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.Dir, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop %s on %s: %w", s.Name, s.Addr(), err)
	}
	return nil
}

func (s *Server) runningLocked() bool {
	if s.cmd == nil || s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// killLocked SIGKILLs the server, its process group and its descendants, and waits until
// all of them are gone. Descendants are found by parent PID before the kill because some
// servers' helpers leave the group (PostgreSQL backends call setsid) and would otherwise
// outlive the server for a moment, holding shared memory that a restart needs.
func (s *Server) killLocked() error {
	pid := s.cmd.Process.Pid
	kids := descendants(pid)
	// The server leads its own process group, so killing the group reaches its members too.
	if err := killGroup(pid); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", s.Name, pid, err)
	}
	for _, k := range kids {
		_ = signalPID(k, syscall.SIGKILL)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill %s (pid %d): process still running 10s after SIGKILL", s.Name, pid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for groupAlive(pid) || anyAlive(kids) {
		if time.Now().After(deadline) {
			return fmt.Errorf("kill %s (pid %d): helper processes still running 10s after SIGKILL", s.Name, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// procStat is what the harness reads from /proc/PID/stat.
type procStat struct {
	pid, ppid, pgrp int
	zombie          bool
	cpu             time.Duration // user plus system time so far (USER_HZ 100)
}

// CPU returns the user plus system CPU time the server's processes (the one started and
// its descendants, e.g. Elasticsearch's two JVMs) have used so far, for benchmarks that
// report the server's CPU per operation. It is 0 where there is no /proc.
func (s *Server) CPU() time.Duration {
	pid := s.PID()
	if pid <= 0 {
		return 0
	}
	kids := map[int]bool{pid: true}
	for _, k := range descendants(pid) {
		kids[k] = true
	}
	var total time.Duration
	for _, p := range procs() {
		if kids[p.pid] {
			total += p.cpu
		}
	}
	return total
}

// descendants returns the PIDs of every live descendant of pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	for _, p := range procs() {
		if !p.zombie {
			children[p.ppid] = append(children[p.ppid], p.pid)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// groupAlive reports whether any live (non-zombie) process is in process group pgid.
func groupAlive(pgid int) bool {
	for _, p := range procs() {
		if p.pgrp == pgid && !p.zombie {
			return true
		}
	}
	return false
}

// anyAlive reports whether any of pids is still a live (non-zombie) process.
func anyAlive(pids []int) bool {
	if len(pids) == 0 {
		return false
	}
	for _, p := range procs() {
		if !p.zombie && slices.Contains(pids, p.pid) {
			return true
		}
	}
	return false
}

// terminateLocked asks for a clean shutdown, waits a bounded time, then kills.
func (s *Server) terminateLocked() error {
	pid := s.cmd.Process.Pid
	if err := signalPID(pid, s.spec.stopSignal); err != nil {
		return fmt.Errorf("signal %s (pid %d): %w", s.Name, pid, err)
	}
	select {
	case <-s.done:
		// Helpers that outlive the leader (none expected) must not keep ports or files.
		if groupAlive(pid) {
			return s.killLocked()
		}
		return nil
	case <-time.After(s.spec.stopTimeout):
	}
	return s.killLocked()
}

// errBind marks a start that failed because the port was taken, which a caller may retry.
var errBind = errors.New("address already in use")

// startLocked starts the process once and waits for readiness. On failure the process is
// killed and the error carries the log tail.
func (s *Server) startLocked(ctx context.Context) error {
	cmd, err := s.spec.command(s)
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	defer logf.Close() // the child has its own copy of the descriptor
	fmt.Fprintf(logf, "=== testserver: %s %s\n", time.Now().Format(time.RFC3339), strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.Dir == "" {
		cmd.Dir = s.Dir
	}
	// Its own process group (so a kill reaches its helpers) and death with the test binary.
	cmd.SysProcAttr = sysProcAttr(s.spec.runAs, true)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done

	rctx, cancel := context.WithTimeout(ctx, readyCap*s.spec.readyTimeout)
	defer cancel()
	if err := s.waitReady(rctx); err != nil {
		exited := !s.runningLocked()
		if !exited {
			_ = s.killLocked()
		}
		tail := s.LogTail()
		// Only this start's output counts: the log keeps earlier runs too.
		last := tail
		if i := strings.LastIndex(tail, "=== testserver:"); i >= 0 {
			last = tail[i:]
		}
		if exited && isBindFailure(last) {
			return fmt.Errorf("%w: %s exited: log %s:\n%s", errBind, s.Name, s.LogPath(), tail)
		}
		return fmt.Errorf("%s not ready: %w; log %s:\n%s", s.Name, err, s.LogPath(), tail)
	}
	return nil
}

// readyCap bounds a start that keeps making progress, in readyTimeouts.
const readyCap = 4

// waitReady polls the readiness probe until it succeeds, the process exits, ctx ends, or
// the server has made no progress for its readyTimeout: its log has not grown for that
// long. A slow start that keeps going is waited for (up to readyCap readyTimeouts): on a
// machine at load 30, Cassandra was still initialising its system keyspaces, a log line
// every second or less, when a fixed 120 s bound killed it (2 starts of 2 in
// TestStoreOutageAndCorruption/cassandra); a server that hangs stops logging.
func (s *Server) waitReady(ctx context.Context) error {
	var last error
	size, progressed := fileSize(s.LogPath()), time.Now()
	for {
		select {
		case <-s.done:
			return fmt.Errorf("process exited (%v) before it was ready", s.cmd.ProcessState)
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = s.spec.ready(pctx, s.Addr())
		cancel()
		if last == nil {
			return nil
		}
		if now := fileSize(s.LogPath()); now != size {
			size, progressed = now, time.Now()
		} else if quiet := time.Since(progressed); quiet > s.spec.readyTimeout {
			return fmt.Errorf("no progress for %v: its log did not grow (last probe: %v)", quiet.Round(time.Second), last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last probe: %v)", ctx.Err(), last)
		case <-s.done:
			return fmt.Errorf("process exited (%v) before it was ready", s.cmd.ProcessState)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fileSize returns the size of the file at path, or -1 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func isBindFailure(log string) bool {
	l := strings.ToLower(log)
	return strings.Contains(l, "address already in use") || strings.Contains(l, "bindexception") ||
		strings.Contains(l, "could not bind") || strings.Contains(l, "failed to bind") ||
		strings.Contains(l, "pre-existing shared memory block")
}

// start allocates ports and a directory, prepares it and starts the server. A bind failure
// (another process took a port between our probe and the server's bind) is retried once
// with fresh ports.
func start(ctx context.Context, name string, sp spec) (*Server, error) {
	if errPlatform != nil {
		return nil, fmt.Errorf("start %s: %w", name, errPlatform)
	}
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		s, err := startOnce(ctx, name, sp)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errBind) {
			break
		}
	}
	return nil, lastErr
}

func startOnce(ctx context.Context, name string, sp spec) (*Server, error) {
	ports, err := freePorts(1 + len(sp.extraPorts))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	dir, err := os.MkdirTemp("", "ndbench-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("start %s: create data dir: %w", name, err)
	}
	host := Host
	if sp.host != "" {
		host = sp.host
	}
	s := &Server{Name: name, Host: host, Port: ports[0], Dir: dir, Ports: map[string]int{}, spec: sp}
	for i, p := range sp.extraPorts {
		s.Ports[p] = ports[i+1]
	}
	fail := func(err error) (*Server, error) {
		_ = s.Stop()
		return nil, fmt.Errorf("start %s on %s: %w", name, s.Addr(), err)
	}
	if sp.runAs != nil {
		// MkdirTemp makes a 0700 root-owned dir; the server user must own it.
		if err := os.Chown(dir, int(sp.runAs.uid), int(sp.runAs.gid)); err != nil {
			return fail(fmt.Errorf("chown data dir: %w", err))
		}
	}
	if sp.prepare != nil {
		if err := sp.prepare(ctx, s); err != nil {
			return fail(err)
		}
	}
	s.mu.Lock()
	err = s.startLocked(ctx)
	s.mu.Unlock()
	if err != nil {
		return fail(err)
	}
	return s, nil
}

// freePorts returns n distinct ports that were free a moment ago. All listeners stay open
// until every port is chosen so the n ports differ.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(Host, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailFile returns at most the last maxLines lines and maxBytes bytes of path.
func tailFile(path string, maxLines, maxBytes int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	off := st.Size() - int64(maxBytes)
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	return tailLines(buf[:n], maxLines)
}

func tailLines(b []byte, maxLines int) string {
	b = bytes.TrimRight(b, "\n")
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// lookBinary finds a server binary on PATH or in the given directories.
func lookBinary(name string, dirs ...string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found (%w); %s", name, err, installHint)
	}
	return p, nil
}

// CacheDir is where the install scripts keep downloaded servers: $NDBENCH_CACHE, or
// $HOME/.cache/ndbench.
func CacheDir() string {
	if c := os.Getenv("NDBENCH_CACHE"); c != "" {
		return c
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "ndbench")
}
