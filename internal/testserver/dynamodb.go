package testserver

import (
	"bytes"
	"context"
	_ "embed" // the DynamoDB Local launcher's source
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// DynamoDBLocalVersion is the version scripts/install-dynamodb-local.sh fetches.
const DynamoDBLocalVersion = "2.6.1"

// dynamoDBLocalReadyTimeout covers the JVM start plus the compilation of the launcher's
// single source file (~2 s), on a machine whose cores other JVMs share.
const dynamoDBLocalReadyTimeout = 90 * time.Second

// launcherSource is a tiny Java program that starts DynamoDB Local on 127.0.0.1 only: the
// stock ServerRunner binds every interface and has no host flag.
//
//go:embed dynamodblocal/Launcher.java
var launcherSource []byte

// DynamoDBLocalHome returns the directory holding DynamoDB Local's lib/: the environment
// variable NDBENCH_DYNAMODB_LOCAL_HOME, or the install script's cache
// ${NDBENCH_CACHE:-$HOME/.cache/ndbench}/dynamodb-local-2.6.1.
func DynamoDBLocalHome() string {
	if h := os.Getenv("NDBENCH_DYNAMODB_LOCAL_HOME"); h != "" {
		return h
	}
	return filepath.Join(CacheDir(), "dynamodb-local-"+DynamoDBLocalVersion)
}

// DynamoDBLocal starts DynamoDB Local (shared database, telemetry off) from the jars in
// DynamoDBLocalHome, bound to 127.0.0.1 on a free port by the embedded launcher. Its data
// lives in a SQLite file in Dir rather than in memory, so that a Kill and Restart (an
// outage test) finds its tables again, as a real store would. Ready means a ListTables
// request gets an HTTP 200. Any access key, secret and region work. Expect 3-10 s to start
// and ~250 MB of memory.
func DynamoDBLocal(ctx context.Context) (*Server, error) {
	home := DynamoDBLocalHome()
	lib := filepath.Join(home, "lib")
	jar := filepath.Join(lib, "DynamoDBLocal-"+DynamoDBLocalVersion+".jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("start dynamodb-local: %s missing (%w); run scripts/install-dynamodb-local.sh (scripts/install-test-deps.sh calls it)", jar, err)
	}
	java, err := lookBinary("java")
	if err != nil {
		return nil, fmt.Errorf("start dynamodb-local: %w", err)
	}
	// The launcher's class: compiled by the install script (current when the source kept
	// beside it is the embedded one), else by javac once per server; without either (a
	// JRE only) java compiles the source file at every start, ~2 s of CPU each.
	javac, _ := exec.LookPath("javac")
	classes := ""
	if src, err := os.ReadFile(filepath.Join(home, "launcher", "Launcher.java")); err == nil && bytes.Equal(src, launcherSource) {
		classes = filepath.Join(home, "launcher")
	}
	return start(ctx, "dynamodb-local", spec{
		prepare: func(ctx context.Context, s *Server) error {
			p := filepath.Join(s.Dir, "Launcher.java")
			if err := os.WriteFile(p, launcherSource, 0o644); err != nil {
				return fmt.Errorf("write %s: %w", p, err)
			}
			if classes == "" && javac != "" {
				out, err := exec.CommandContext(ctx, javac, "-nowarn", "-cp", filepath.Join(lib, "*"),
					"-d", filepath.Join(s.Dir, "classes"), p).CombinedOutput()
				if err != nil {
					return fmt.Errorf("compile %s: %w: %s", p, err, out)
				}
			}
			return os.MkdirAll(filepath.Join(s.Dir, "db"), 0o755)
		},
		command: func(s *Server) (*exec.Cmd, error) {
			// A small serial-GC heap, and only the C1 JIT: the machine's cores are shared
			// with other test JVMs, and C1 alone halves the start (~1.6 s of CPU instead of
			// ~3.5 s, measured) at some cost in steady-state speed, which an emulator's
			// figures do not need.
			args := []string{"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", serverJIT,
				"-Djava.net.preferIPv4Stack=true", "-Djava.library.path=" + lib}
			switch {
			case classes != "":
				args = append(args, "-cp", classes+string(os.PathListSeparator)+filepath.Join(lib, "*"), "Launcher")
			case javac != "":
				args = append(args, "-cp", filepath.Join(s.Dir, "classes")+string(os.PathListSeparator)+filepath.Join(lib, "*"), "Launcher")
			default:
				args = append(args, "-cp", filepath.Join(lib, "*"), filepath.Join(s.Dir, "Launcher.java"))
			}
			args = append(args, "-port", strconv.Itoa(s.Port), "-dbPath", filepath.Join(s.Dir, "db"),
				"-sharedDb", "-disableTelemetry")
			return exec.Command(java, args...), nil
		},
		ready:        dynamoDBLocalReady,
		readyTimeout: dynamoDBLocalReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
	})
}

// dynamoDBLocalReady sends ListTables, signed with a dummy key: DynamoDB Local checks that
// a signature is present, not that it is valid.
func dynamoDBLocalReady(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/", bytes.NewBufferString("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=probe/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ListTables: HTTP %d: %s", resp.StatusCode, body)
	}
	return nil
}
