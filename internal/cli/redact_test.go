package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypoNeverLeaksASecretFromTheCommandLine: errors, `ndbench config` (text and JSON),
// the run report, and the serve log and status page never show a value that may be a
// secret: under a misspelt key, under a driver not in the build, or as the password of a
// URL in a known key.
func TestTypoNeverLeaksASecretFromTheCommandLine(t *testing.T) {
	const pw = "S3cretPW"
	dir := t.TempDir()
	props := filepath.Join(dir, "ndbench.properties")
	if err := os.WriteFile(props, []byte("cockroachdb.dsn=postgresql://root:"+pw+"@localhost:26257/defaultdb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "r.json")
	runs := [][]string{
		{"config", "--driver", "memory", "--set", "drivers.memory.pasword=" + pw},
		{"config", "--driver", "postgres", "--set", "drivers.postgres.dns=postgres://u:" + pw + "@db.example.com/x"},
		{"config", "--driver", "memory", "-c", props},
		{"config", "--driver", "memory", "--set", "drivers.zzz.url=redis://:" + pw + "@h"},
		{"config", "--json", "--driver", "memory", "--set", "drivers.zzz.url=redis://:" + pw + "@h"},
		{"config", "--driver", "memory", "--set", "workload.keyPrefix=redis://u:" + pw + "@h"},
		{"config", "--driver", "memory", "--set", "drivers.memory.errorClass=redis://u:" + pw + "@h"},
		{"run", "--driver", "memory", "--duration", "1s", "--report", rep, "--set", "drivers.zzz.url=redis://:" + pw + "@h",
			"--set", "workload.readRate=50", "--set", "workload.writeRate=50"},
	}
	for _, args := range runs {
		code, out, errOut := ndbench(t, nil, args...)
		if strings.Contains(out+errOut, pw) {
			t.Errorf("ndbench %v (exit %d) shows the secret:\n%s%s", args, code, out, errOut)
		}
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(pw)) {
		t.Errorf("the report shows the secret")
	}
	if !bytes.Contains(b, []byte("drivers.zzz.url")) {
		t.Errorf("the report does not list drivers.zzz.url")
	}

	// A watched file edited with a misspelt key: the serve log and the status page.
	cfg := filepath.Join(dir, "ndbench.yaml")
	if err := os.WriteFile(cfg, []byte("workload:\n  readRate: 300\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, errOut, _ := startServe(t, nil, "--listen", "127.0.0.1:0", "--driver", "memory", "-c", cfg)
	if err := os.WriteFile(cfg, []byte("drivers:\n  memory:\n    pasword: "+pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get(t, base+"/api/v1/status", "")
		if bytes.Contains(body, []byte("lastError")) {
			if bytes.Contains(body, []byte(pw)) {
				t.Errorf("status shows the secret: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bad edit was not reported in the status: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(errOut.String(), "pasword") || strings.Contains(errOut.String(), pw) {
		t.Errorf("serve log should name the key and hide its value:\n%s", errOut)
	}
}
