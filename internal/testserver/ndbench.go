package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// NdbenchPackage is the ndbench command's package, built by BuildNdbench.
const NdbenchPackage = "github.com/ndbench/ndbench/cmd/ndbench"

// NdbenchBinEnv names the environment variable through which a test run is handed an
// ndbench binary already built (make integration builds one for every package, so each
// package's fleet tests do not compile and link their own). Not NDBENCH_...: the nodes
// inherit the test's environment, and ndbench refuses an NDBENCH_ variable that is not
// one of its settings.
const NdbenchBinEnv = "TEST_NDBENCH_BIN"

// BuildNdbench builds the ndbench binary into dir and returns its path. A test package
// that starts ndbench processes (a fleet) builds it once, in TestMain or a sync.Once of
// its own, and hands the path to Ndbench. When TEST_NDBENCH_BIN names a binary, that binary is
// returned and nothing is built; `go test` alone, without the variable, still works.
func BuildNdbench(ctx context.Context, dir string) (string, error) {
	if bin := os.Getenv(NdbenchBinEnv); bin != "" {
		st, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("build ndbench: %s=%s: %w", NdbenchBinEnv, bin, err)
		}
		if !st.Mode().IsRegular() {
			return "", fmt.Errorf("build ndbench: %s=%s is not a file (want the path of an ndbench binary)", NdbenchBinEnv, bin)
		}
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build ndbench: the go command is needed: %w", err)
	}
	bin := filepath.Join(dir, "ndbench")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, NdbenchPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w: %s", NdbenchPackage, err, tailLines(out, 20))
	}
	return bin, nil
}

// Ndbench starts `bin serve --listen 127.0.0.1:PORT` with the arguments args returns for
// that address (its --advertise, --peers of a fleet, ...), and waits for /health. The
// process is stopped by PID like every server of this package (SIGTERM, then SIGKILL),
// and Kill stops it abruptly, as a node that dies.
func Ndbench(ctx context.Context, bin string, args func(addr string) []string) (*Server, error) {
	return start(ctx, "ndbench", spec{
		command: func(s *Server) (*exec.Cmd, error) {
			a := append([]string{"serve", "--listen", s.Addr()}, args(s.Addr())...)
			return exec.Command(bin, a...), nil
		},
		ready:        httpReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
	})
}

// NdbenchIn is Ndbench run by `ip netns exec netns` (package netlab makes such hosts),
// listening on host, the namespace's address, which the test process must reach. ip
// execs the command, so the server's PID is ndbench's own: Pause, Kill and Stop act on
// it as on a server started by Ndbench.
func NdbenchIn(ctx context.Context, bin, netns, host string, args func(addr string) []string) (*Server, error) {
	return start(ctx, "ndbench", spec{
		command: func(s *Server) (*exec.Cmd, error) {
			a := append([]string{"netns", "exec", netns, bin, "serve", "--listen", s.Addr()}, args(s.Addr())...)
			return exec.Command("ip", a...), nil
		},
		ready:        httpReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
		host:         host,
	})
}
