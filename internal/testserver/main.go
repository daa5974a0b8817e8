package testserver

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// startBudget bounds a TestMain start, Cassandra's slow start included.
const startBudget = 3 * time.Minute

// Main runs a test package against one server: it starts the server with start, hands it to
// set (which stores it in a package variable), runs the tests, prints the server's log tail
// when a test failed, and stops the server. It returns the exit code for os.Exit. A server
// that fails to start fails the package (exit code 1); it never skips the tests.
func Main(m *testing.M, start func(context.Context) (*Server, error), set func(*Server)) int {
	ctx, cancel := context.WithTimeout(context.Background(), startBudget)
	s, err := start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", err)
		return 1
	}
	set(s)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- testserver %s on %s: last lines of %s:\n%s\n", s.Name, s.Addr(), s.LogPath(), s.LogTail())
	}
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
