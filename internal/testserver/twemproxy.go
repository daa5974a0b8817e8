package testserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TwemproxyConfig is the part of a twemproxy (nutcracker) server pool that tests vary.
// The distribution is always ketama (consistent hashing, as in Dynomite's token ring).
type TwemproxyConfig struct {
	// Hash is the key hash: fnv1a_64 (the default, twemproxy's documented choice), murmur,
	// md5, ... . twemproxy's fnv1a_64 keeps only 32 bits of state and prime, so keys that
	// differ only in their last characters (NDBench's "T0", "T1", ...) land close together
	// on the ring.
	Hash string
	// Redis selects the protocol: RESP (redis: true) or the memcached text protocol.
	Redis bool
	// AutoEjectHosts removes a backend from the ring after ServerFailureLimit consecutive
	// failures, for ServerRetryTimeout; its keys then map to the other backends. Off, a
	// dead backend's keys fail until it returns, as with Dynomite.
	AutoEjectHosts bool
	// ServerFailureLimit is the failures before ejection (only with AutoEjectHosts); 0 means 1.
	ServerFailureLimit int
	// ServerRetryTimeout is how long an ejected backend stays out of the ring (only with
	// AutoEjectHosts; without ejection twemproxy reconnects on the next request); 0 means 1 s.
	ServerRetryTimeout time.Duration
	// Timeout bounds each request to a backend; a backend that does not answer in time
	// fails the request with "Connection timed out". 0 means 1 s.
	Timeout time.Duration
}

// withDefaults fills the zero values of c.
func (c TwemproxyConfig) withDefaults() TwemproxyConfig {
	if c.Hash == "" {
		c.Hash = "fnv1a_64"
	}
	if c.ServerFailureLimit <= 0 {
		c.ServerFailureLimit = 1
	}
	if c.ServerRetryTimeout <= 0 {
		c.ServerRetryTimeout = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Second
	}
	return c
}

// Twemproxy starts nutcracker (twemproxy) on a free loopback port in front of backends,
// which must be running Redis servers (c.Redis) or memcacheds. Its stats port
// (Ports["stats"]) is bound to loopback too. Ready means a GET through the proxy gets a
// protocol answer, i.e. the proxy forwards to a backend. The backends are not owned by the
// proxy: stopping it leaves them running.
func Twemproxy(ctx context.Context, c TwemproxyConfig, backends []*Server) (*Server, error) {
	if len(backends) == 0 {
		return nil, errors.New("start twemproxy: no backends")
	}
	bin, err := lookBinary("nutcracker")
	if err != nil {
		return nil, fmt.Errorf("start twemproxy: %w", err)
	}
	c = c.withDefaults()
	addrs := make([]string, len(backends))
	for i, b := range backends {
		addrs[i] = b.Addr()
	}
	ready := twemproxyMemcacheReady
	if c.Redis {
		ready = twemproxyRedisReady
	}
	return start(ctx, "twemproxy", spec{
		prepare: func(_ context.Context, s *Server) error {
			return os.WriteFile(twemproxyConfPath(s), []byte(twemproxyYAML(Host+":"+strconv.Itoa(s.Port), c, addrs)), 0o644)
		},
		command: func(s *Server) (*exec.Cmd, error) {
			// -o: nutcracker opens its log with O_APPEND, so it shares server.log with the
			// harness's own lines; without -o it writes to /var/log/nutcracker.
			return exec.Command(bin, "-c", twemproxyConfPath(s), "-o", s.LogPath(),
				"-s", strconv.Itoa(s.Ports["stats"]), "-a", Host,
				"-p", filepath.Join(s.Dir, "nutcracker.pid")), nil
		},
		ready:        ready,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
		extraPorts:   []string{"stats"},
	})
}

func twemproxyConfPath(s *Server) string { return filepath.Join(s.Dir, "nutcracker.yml") }

// twemproxyYAML renders one server pool named ndbench listening on listen. Each backend
// gets weight 1 and a fixed name (b0, b1, ...): ketama hashes the name rather than the
// address when one is given, so which backend owns a key does not depend on the free
// ports the test happened to get.
func twemproxyYAML(listen string, c TwemproxyConfig, backends []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `ndbench:
  listen: %s
  hash: %s
  distribution: ketama
  redis: %t
  auto_eject_hosts: %t
  server_failure_limit: %d
  server_retry_timeout: %d
  timeout: %d
  preconnect: false
  servers:
`, listen, c.Hash, c.Redis, c.AutoEjectHosts, c.ServerFailureLimit, c.ServerRetryTimeout.Milliseconds(), c.Timeout.Milliseconds())
	for i, a := range backends {
		fmt.Fprintf(&b, "    - %s:1 b%d\n", a, i)
	}
	return b.String()
}

// twemproxyRedisReady sends a GET, which twemproxy forwards (PING it answers itself). It
// is a RESP array: twemproxy closes the connection on inline commands.
func twemproxyRedisReady(ctx context.Context, addr string) error {
	return lineProbe(ctx, addr, "*2\r\n$3\r\nGET\r\n$13\r\nndbench-probe\r\n", "$")
}

// twemproxyMemcacheReady sends a get, which twemproxy forwards: END (a miss) or VALUE (a
// hit) means a backend answered through the proxy.
func twemproxyMemcacheReady(ctx context.Context, addr string) error {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "get ndbench-probe\r\n"); err != nil {
		return fmt.Errorf("send get: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read reply to get: %w", err)
	}
	if !strings.HasPrefix(line, "END") && !strings.HasPrefix(line, "VALUE ") {
		return fmt.Errorf("reply to get: %q", strings.TrimSpace(line))
	}
	return nil
}

// TwemproxyPool is a twemproxy in front of backends this package started for it.
type TwemproxyPool struct {
	// Proxy is the nutcracker process; clients talk to Proxy.Addr().
	Proxy *Server
	// Backends are the stores behind it, in the order of the config (names b0, b1, ...).
	Backends []*Server
}

// StartTwemproxyPool starts n backends with startBackend (Redis or Memcached, matching
// c.Redis) and a twemproxy in front of them. On failure whatever started is stopped.
func StartTwemproxyPool(ctx context.Context, c TwemproxyConfig, n int, startBackend func(context.Context) (*Server, error)) (*TwemproxyPool, error) {
	p := &TwemproxyPool{}
	for i := 0; i < n; i++ {
		b, err := startBackend(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start twemproxy backend %d: %w", i, err), p.Stop())
		}
		p.Backends = append(p.Backends, b)
	}
	proxy, err := Twemproxy(ctx, c, p.Backends)
	if err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	p.Proxy = proxy
	return p, nil
}

// Stop stops the proxy, then every backend, and reports every failure. It is idempotent.
func (p *TwemproxyPool) Stop() error {
	var errs []error
	if p.Proxy != nil {
		errs = append(errs, p.Proxy.Stop())
	}
	for _, b := range p.Backends {
		errs = append(errs, b.Stop())
	}
	return errors.Join(errs...)
}

// LogTails returns the last lines of the proxy's and each backend's log, for a failure message.
func (p *TwemproxyPool) LogTails() string {
	var b strings.Builder
	for _, s := range append([]*Server{p.Proxy}, p.Backends...) {
		if s != nil {
			fmt.Fprintf(&b, "--- %s on %s (%s):\n%s\n", s.Name, s.Addr(), s.LogPath(), s.LogTail())
		}
	}
	return b.String()
}
