package testserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
)

func TestTailLines(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"fewer lines than asked", "a\nb\n", 5, "a\nb"},
		{"keeps the last lines", "a\nb\nc\nd\n", 2, "c\nd"},
		{"no trailing newline", "a\nb\nc", 1, "c"},
		{"empty", "", 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tailLines([]byte(tc.in), tc.n); got != tc.want {
				t.Errorf("tailLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

func TestIsBindFailure(t *testing.T) {
	for _, tc := range []struct {
		log  string
		want bool
	}{
		{"# Warning: Could not create server TCP listening socket 127.0.0.1:6379: bind: Address already in use", true},
		{"failed to listen on TCP port 11211: Address already in use", true},
		{"FATAL:  could not bind IPv4 address \"127.0.0.1\": Address already in use", true},
		{"FATAL:  pre-existing shared memory block (key 1, ID 4) is still in use", true},
		{"java.net.BindException: Address already in use", true},
		{"FATAL:  data directory has wrong ownership", false},
		{"", false},
	} {
		if got := isBindFailure(tc.log); got != tc.want {
			t.Errorf("isBindFailure(%q) = %v, want %v", tc.log, got, tc.want)
		}
	}
}

func TestDSNOnlyForPostgres(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"postgres", "postgres://postgres@127.0.0.1:5999/postgres?sslmode=disable"},
		{"redis", ""},
		{"cassandra", ""},
	} {
		s := &Server{Name: tc.name, Host: Host, Port: 5999}
		if got := s.DSN(); got != tc.want {
			t.Errorf("%s DSN() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("freePorts(3) = %v, want 3 distinct ports", ports)
		}
		seen[p] = true
	}
}

func TestMissingCassandraNamesInstallScript(t *testing.T) {
	t.Setenv("NDBENCH_CASSANDRA_HOME", t.TempDir())
	_, err := Cassandra(t.Context())
	if err == nil || !strings.Contains(err.Error(), "install-test-deps.sh") {
		t.Fatalf("Cassandra() with an empty home: err = %v, want a hint to run install-test-deps.sh", err)
	}
}

// A run handed a built binary (make integration's TEST_NDBENCH_BIN) uses it and builds nothing:
// the context is already cancelled, so a build would fail. A path that is not a binary
// file fails naming the variable.
func TestBuildNdbenchUsesTheGivenBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ndbench")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name, env, want, wantErr string
	}{
		{"a binary", bin, bin, ""},
		{"missing", filepath.Join(dir, "absent"), "", "TEST_NDBENCH_BIN=" + filepath.Join(dir, "absent")},
		{"a directory", dir, "", "is not a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(NdbenchBinEnv, tc.env)
			got, err := BuildNdbench(ctx, t.TempDir())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("BuildNdbench = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("BuildNdbench = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// The nodes a test starts inherit its environment, and ndbench refuses an unknown
// variable under its configuration's prefix: the binary's variable must be outside it.
func TestNdbenchBinEnvIsNotASetting(t *testing.T) {
	if strings.HasPrefix(NdbenchBinEnv, config.EnvPrefix) {
		t.Errorf("%s starts with %s: every node started with it set would refuse to start", NdbenchBinEnv, config.EnvPrefix)
	}
}

// TestBenchRequested: the servers of a benchmark run keep their JVMs' default JIT, in
// every form go test and a test binary take the flag; a run of tests only gets C1.
func TestBenchRequested(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s", "-test.run=TestX"}, false},
		{[]string{"-test.run=^$", "-test.bench=PutGet", "-test.benchtime=20000x"}, true},
		{[]string{"-test.bench", "."}, true},
		{[]string{"--test.bench=."}, true},
		{[]string{"-bench=Write"}, true},
		{[]string{"-test.bench="}, false},
		{[]string{"-test.benchtime=2s"}, false},
		{[]string{"-test.v", "--", "-test.bench=."}, false},
		{nil, false},
	} {
		if got := benchRequested(tc.args); got != tc.want {
			t.Errorf("benchRequested(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
