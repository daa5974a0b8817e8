package source

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// leakSecret is the password every case hides somewhere; it must appear in no output.
const leakSecret = "S3cretPW"

// shownText is everything a snapshot or an error lets a user see: error text, field
// errors and entries as JSON, notices.
func shownText(t *testing.T, snap *config.Snapshot, err error) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err != nil {
		b.WriteString(err.Error())
		if fes, ok := driver.AsFieldErrors(err); ok {
			_ = enc.Encode(fes)
		}
	}
	if snap != nil {
		_ = enc.Encode(snap.Entries)
		b.WriteString(strings.Join(snap.Notices, "\n"))
	}
	return b.String()
}

func TestTypoNeverLeaksASecret(t *testing.T) {
	props := func(text string) string {
		p := writeFile(t, "ndbench.properties", text)
		return p
	}
	yaml := func(text string) string { return writeFile(t, "ndbench.yaml", text) }
	tests := []struct {
		name string
		src  inputs
		// show is a fragment the output must contain: the key is named, and URLs of
		// known non-secret keys keep everything but the password.
		show string
	}{
		{"mistyped option of a registered driver", inputs{Sets: []string{"drivers.fake-kv.pasword=" + leakSecret}}, "drivers.fake-kv.pasword"},
		{"mistyped DSN option", inputs{Sets: []string{"drivers.fake-kv.dns=postgres://u:" + leakSecret + "@db.example.com/x"}}, "drivers.fake-kv.dns"},
		{"mistyped workload key", inputs{Sets: []string{"workload.pasword=" + leakSecret}}, "workload.pasword"},
		{"unknown section", inputs{Sets: []string{"redis.password=" + leakSecret}}, "redis.password"},
		{"unknown NDBench property", inputs{Sets: []string{"ndbench.config.pasword=" + leakSecret}}, "ndbench.config.pasword"},
		{"--set without =", inputs{Sets: []string{"drivers.fake-kv.password " + leakSecret}}, "key=value"},
		{"--set with an empty key", inputs{Sets: []string{"=" + leakSecret}}, "key=value"},
		{"unregistered driver's URL", inputs{Sets: []string{"drivers.zzz.url=redis://:" + leakSecret + "@h"}}, "drivers.zzz.url"},
		{"unregistered driver's oddly named credential", inputs{Sets: []string{"drivers.zzz.pw=" + leakSecret}}, "drivers.zzz.pw"},
		{"properties file key without the ndbench.config prefix",
			inputs{File: props("cockroachdb.dsn=postgresql://root:" + leakSecret + "@localhost:26257/defaultdb\n")}, "cockroachdb.dsn"},
		{"properties file, mistyped plugin property of a driver not in the build",
			inputs{File: props("ndbench.config.cockroachdb.dns=postgresql://root:" + leakSecret + "@localhost:26257/db\n")}, "drivers.postgres.dns"},
		{"YAML file, mistyped key", inputs{File: yaml("drivers:\n  fake-kv:\n    pasword: " + leakSecret + "\n")}, "drivers.fake-kv.pasword"},
		{"environment, mistyped option", inputs{Env: []string{"NDBENCH_DRIVERS_FAKE_KV_PASWORD=" + leakSecret}}, "pasword"},
		{"environment, unknown variable", inputs{Env: []string{"NDBENCH_PASWORD=" + leakSecret}}, "NDBENCH_PASWORD"},
		{"known list of URLs keeps all but the passwords",
			inputs{Sets: []string{"drivers.fake-kv.addrs=redis://u:" + leakSecret + "@h1:6379,rediss://:" + leakSecret + "@h2:6380"}},
			"redis://u:xxxxx@h1:6379,rediss://:xxxxx@h2:6380"},
		{"known key, URL with a password parameter",
			inputs{Sets: []string{"drivers.fake-kv.addrs=redis://h:6379/0?password=" + leakSecret + "&db=1"}}, "redis://h:6379/0?password=xxxxx&db=1"},
		{"known key, key=value DSN", inputs{Sets: []string{"workload.keyPrefix=host=h user=u password=" + leakSecret}}, "password=xxxxx"},
		{"known key, bad value with a URL", inputs{Sets: []string{"drivers.fake-kv.colsPerRow=http://u:" + leakSecret + "@h"}}, "http://u:xxxxx@h"},
		{"known workload key, bad value with a URL", inputs{Sets: []string{"workload.readRate=http://u:" + leakSecret + "@h"}}, "workload.readRate"},
		{"driver name with a URL", inputs{Sets: []string{"driver.name=redis://u:" + leakSecret + "@h"}}, "redis://u:xxxxx@h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			src.Env = append(slices.Clone(selectFake), src.Env...)
			snap, err := load(src)
			out := shownText(t, snap, err)
			if strings.Contains(out, leakSecret) {
				t.Errorf("the secret is shown:\n%s", out)
			}
			if !strings.Contains(out, tt.show) {
				t.Errorf("output does not show %q:\n%s", tt.show, out)
			}
		})
	}
}

// TestLiveChangesNeverLeakASecret: the same through the store (API, NDBench config/set,
// etcd) and a watched file, whose errors go to the log and the status page.
func TestLiveChangesNeverLeakASecret(t *testing.T) {
	st := config.NewStore(mustLoad(t, inputs{Env: selectFake}))
	for _, values := range []map[string]string{
		{"drivers.fake-kv.pasword": leakSecret},
		{"drivers.zzz.pasword": leakSecret, "workload.readers": "x"},
		{"workload.readRate": "https://u:" + leakSecret + "@h"},
	} {
		_, err := st.PatchFrom(config.LayerRuntime, "api", values)
		if err == nil {
			t.Fatalf("patch %v accepted", values)
		}
		if out := shownText(t, nil, err); strings.Contains(out, leakSecret) {
			t.Errorf("patch error shows the secret:\n%s", out)
		}
	}
	snap, err := st.PatchFrom(config.LayerRuntime, "api", map[string]string{"drivers.zzz.url": "redis://:" + leakSecret + "@h"})
	if err != nil {
		t.Fatal(err)
	}
	if out := shownText(t, snap, nil); strings.Contains(out, leakSecret) {
		t.Errorf("entries show the secret:\n%s", out)
	}

	path := writeFile(t, "ndbench.yaml", "workload:\n  readRate: 5\n")
	var log errorLog
	fs, err := OpenFile(st, path, log.add)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-done }()
	go func() { done <- fs.Run(ctx) }()
	waitFor(t, "the file to apply", func() bool { return fs.Status().Version > 0 })
	if err := os.WriteFile(path, []byte("drivers:\n  fake-kv:\n    pasword: "+leakSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bad edit to be reported", func() bool { return len(log.all()) > 0 })
	for _, e := range log.all() {
		if strings.Contains(e.Error(), leakSecret) {
			t.Errorf("watched file error shows the secret: %v", e)
		}
	}
	if s := fs.Status(); strings.Contains(s.Error, leakSecret) || s.Error == "" {
		t.Errorf("source status error %q", s.Error)
	}
}

// TestEtcdEndpointPasswordNotShown: an etcd endpoint URL with a password is shown without
// it in connection errors (and the source's status label).
func TestEtcdEndpointPasswordNotShown(t *testing.T) {
	st := config.NewStore(mustLoad(t, inputs{Env: selectFake}))
	_, err := OpenEtcd(context.Background(), st, EtcdOptions{Endpoints: []string{"http://root:" + leakSecret + "@127.0.0.1:1"},
		Prefix: "/ndbench/x/", Timeout: 300 * time.Millisecond})
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if strings.Contains(err.Error(), leakSecret) || !strings.Contains(err.Error(), "root:xxxxx@127.0.0.1:1") {
		t.Errorf("error %q: want the endpoint without its password", err)
	}
}
