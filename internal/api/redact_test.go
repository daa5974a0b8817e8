package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/node"
)

// lockedBuffer is a log destination shared by goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTypoNeverLeaksASecret drives every way a value reaches a user of the service: config
// listings, reports, problems for rejected changes (API and NDBench), the status page's
// last error and the log, with secrets under misspelt keys, under a driver not in the
// build, and inside URLs of known keys.
func TestTypoNeverLeaksASecret(t *testing.T) {
	const pw, numericPW = "S3cretPW", "987654321"
	dir := t.TempDir()
	file := filepath.Join(dir, "ndbench.yaml")
	if err := os.WriteFile(file, []byte("workload:\n  readRate: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := source.Load(file, config.Sources{Sets: []string{"driver.name=memory",
		"drivers.zzz.url=redis://:" + pw + "@h", "drivers.zzz.pw=" + pw, "workload.keyPrefix=http://u:" + pw + "@h/"}})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	inst := node.New(config.NewStore(snap), log)
	defer inst.Close()
	srv, err := New(Options{Instance: inst, Logger: log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	e := &env{t: t, inst: inst, srv: srv, ts: ts}

	// A watched file edited with a misspelt key, reported as `ndbench serve` does.
	fs, err := source.OpenFile(inst.Store(), file, func(err error) {
		log.Warn("configuration change rejected", "err", err)
		inst.RecordError(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fs.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := os.WriteFile(file, []byte("drivers:\n  memory:\n    pasword: "+pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for inst.Status().LastError == nil {
		if time.Now().After(deadline) {
			t.Fatal("the bad edit of the watched file was not reported")
		}
		time.Sleep(10 * time.Millisecond)
	}

	steps := []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", "/api/v1/config", nil, 200},
		{"GET", "/api/v1/report", nil, 200},
		{"GET", "/api/v1/report.html", nil, 200},
		{"GET", "/api/v1/status", nil, 200},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.pasword":"` + pw + `"}}`, 422},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.dns":"postgres://u:` + pw + `@h/db"}}`, 422},
		{"PATCH", "/api/v1/config", `{"values":{"workload.readRate":"http://u:` + pw + `@h"}}`, 422},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.pasword":` + numericPW + `}}`, 422},
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"pasword":"` + pw + `"}}`, 422},
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"pasword":` + numericPW + `}}`, 422},
		// A body with a property the route does not take: huma names the object that holds
		// it as the rejected value, the whole body here, secrets and all.
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"password":"` + pw + `"},"foo":1}`, 422},
		{"POST", "/api/v1/driver/init", `{"driver":"memory","passwrd":"` + pw + `"}`, 422},
		{"PATCH", "/api/v1/config", `{"values":{"workload.readRate":"5"},"password":"` + pw + `"}`, 422},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.pasword":"` + pw + `"},"x":{"y":"` + pw + `"}}`, 422},
		{"POST", "/api/v1/load/start", `{"ops":["read"],"token":"` + pw + `"}`, 422},
		{"POST", "/api/v1/backfill/start", `{"workers":"` + pw + `"}`, 422},
		{"POST", "/api/v1/autotune", `{"class":"read","secret":"` + pw + `"}`, 422},
		// The token of a login is a secret wherever it is rejected: too long, or beside an
		// unknown property.
		{"POST", "/api/v1/session", `{"token":"` + strings.Repeat(pw, 600) + `"}`, 422},
		{"POST", "/api/v1/session", `{"token":"` + pw + `","x":1}`, 422},
		// A numeric secret sent where a string belongs: the number is the secret.
		{"POST", "/api/v1/session", `{"token":` + numericPW + `}`, 422},
		{"POST", "/api/v1/driver/init", `{"driver":` + numericPW + `}`, 422},
		{"POST", "/api/v1/autotune", `{"class":` + numericPW + `}`, 422},
		{"POST", "/api/v1/load/start", `{"ops":[` + numericPW + `]}`, 422},
		{"PUT", "/api/v1/kv/T1", `{"value":` + numericPW + `}`, 422},
		// A problem a handler builds itself names the rejected value too.
		{"GET", "/api/v1/stats/series?since=http://u:" + pw + "@h", nil, 422},
		{"GET", "/REST/ndbench/config/set?drivers.memory.pasword=" + pw, nil, 400},
		{"GET", "/REST/ndbench/config/list", nil, 200},
		{"GET", "/REST/ndbench/driver/getserverstatus", nil, 200},
	}
	for _, s := range steps {
		st, body := e.callAs("", s.method, s.path, s.body)
		if st != s.want {
			t.Errorf("%s %s: status %d, want %d: %.300s", s.method, s.path, st, s.want, body)
		}
		for _, secret := range []string{pw, numericPW} {
			if bytes.Contains(body, []byte(secret)) {
				t.Errorf("%s %s shows the secret: %s", s.method, s.path, body)
			}
		}
	}
	// Known keys keep everything but the password; unknown ones are hidden whole.
	if _, body := e.callAs("", "GET", "/api/v1/config", nil); !bytes.Contains(body, []byte("http://u:xxxxx@h/")) {
		t.Errorf("config does not show the key prefix without its password: %s", body)
	}
	if strings.Contains(logs.String(), pw) {
		t.Errorf("the log shows the secret:\n%s", logs.String())
	}
}

// TestUnexpectedPropertyLocation: a property a body does not take is named where it is,
// also beside a map of dotted keys, which threw huma's path off (body.values.drivers.x for
// a top-level x after drivers.redis.password).
func TestUnexpectedPropertyLocation(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ method, path, body, want string }{
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.shards":"8"},"x":1}`, "body.x"},
		{"PATCH", "/api/v1/config", `{"values":{"workload.readRate":"2000"},"password":"p"}`, "body.password"},
		{"PATCH", "/api/v1/config", `{"values":{"workload.readRate":"2000","drivers.memory.shards":"8"},"a.b":1}`, "body.a.b"},
		{"PATCH", "/api/v1/config", `{"x":1,"values":{"workload.readRate":"2000"}}`, "body.x"},
		{"POST", "/api/v1/driver/init", `{"driver":"memory","foo":1}`, "body.foo"},
	} {
		st, body := e.call(c.method, c.path, c.body)
		var p Problem
		if err := json.Unmarshal(body, &p); err != nil || st != 422 || len(p.Errors) != 1 {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, st, body)
			continue
		}
		if got := p.Errors[0].Location; got != c.want {
			t.Errorf("%s %s: location %q, want %q", c.path, c.body, got, c.want)
		}
		if p.Errors[0].Value != nil {
			t.Errorf("%s %s: the body is echoed: %v", c.path, c.body, p.Errors[0].Value)
		}
	}
}

// TestRejectedValueEcho: what a validation error shows of the value it rejects, on several
// routes. Numbers are shown where the field takes a number (a bound was missed); a number
// where a string belongs may be a secret typed as a number, and strings of a body, objects
// and lists are never shown. Query values are shown without URL passwords, also in the
// problems handlers build themselves.
func TestRejectedValueEcho(t *testing.T) {
	e := newEnv(t)
	const redacted = "<redacted>"
	for _, c := range []struct {
		method, path string
		body         any
		location     string
		want         any // nil: no value
	}{
		{"POST", "/api/v1/backfill/start", `{"workers":-5}`, "body.workers", -5.0},
		{"POST", "/api/v1/backfill/start", `{"workers":2.5}`, "body.workers", 2.5},
		{"POST", "/api/v1/backfill/start", `{"rate":-1}`, "body.rate", -1.0},
		{"POST", "/api/v1/backfill/start", `{"workers":"987654321"}`, "body.workers", redacted},
		{"POST", "/api/v1/backfill/start", `{"verify":"x"}`, "body.verify", redacted},
		{"POST", "/api/v1/backfill/start", `{"verify":987654321}`, "body.verify", redacted},
		{"POST", "/api/v1/session", `{"token":987654321}`, "body.token", redacted},
		{"POST", "/api/v1/session", `{"token":true}`, "body.token", true},
		{"POST", "/api/v1/driver/init", `{"driver":987654321}`, "body.driver", redacted},
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"pasword":987654321}}`, "body.options.pasword", redacted},
		{"POST", "/api/v1/driver/init", `{"driver":{"password":"p"}}`, "body.driver", nil},
		{"POST", "/api/v1/load/start", `{"ops":[987654321]}`, "body.ops[0]", redacted},
		{"POST", "/api/v1/load/start", `{"ops":"read"}`, "body.ops", redacted},
		{"PUT", "/api/v1/kv/T1", `{"value":987654321}`, "body.value", redacted},
		{"GET", "/api/v1/stats/intervals?since=http://u:pw@h", nil, "query.since", "http://u:xxxxx@h"},
		{"GET", "/api/v1/stats/series?since=http://u:pw@h", nil, "query.since", "http://u:xxxxx@h"},
		{"GET", "/api/v1/stats/series?since=yesterday", nil, "query.since", "yesterday"},
	} {
		st, body := e.call(c.method, c.path, c.body)
		var p Problem
		if err := json.Unmarshal(body, &p); err != nil || st != 422 || len(p.Errors) != 1 {
			t.Errorf("%s %s %v: %d %s", c.method, c.path, c.body, st, body)
			continue
		}
		if d := p.Errors[0]; d.Location != c.location || d.Value != c.want {
			t.Errorf("%s %s %v: %s = %#v, want %s = %#v", c.method, c.path, c.body, d.Location, d.Value, c.location, c.want)
		}
	}
}

// TestLocationBesideDottedKeys: huma builds an error's location by pushing each key onto a
// path and cutting the last dot-separated segment off again, so a map key with a dot or a
// bracket (workload.readRate, a[0]) left segments behind and threw off every location that
// followed it: in the map, after it and beside it, on any route. Keys are visited in map
// order, so each case is tried several times.
func TestLocationBesideDottedKeys(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		method, path, body string
		want               []string // the locations, sorted
	}{
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"a.b":"x"},"foo":1}`, []string{"body.foo"}},
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"a.b.c":"x","password":5}}`, []string{"body.options.password"}},
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"a[0]":"x","b.c":"y"},"foo":1}`, []string{"body.foo"}},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.shards":"8","workload.readRate":{"p":"x"}}}`, []string{"body.values.workload.readRate"}},
		{"PATCH", "/api/v1/config", `{"values":{"a[0]":"1","workload.readRate":[1]}}`, []string{"body.values.workload.readRate"}},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.shards":"8"},"x":1,"a.x":2}`, []string{"body.a.x", "body.x"}},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.shards":"8"},"values.x":1}`, []string{"body.values.x"}},
		{"PATCH", "/api/v1/config", `{"values":{"drivers.memory.shards":"8","workload.readRate":"1"},"x[1]":{"y.z":1}}`, []string{"body.x[1]"}},
		// The private-use character the escape uses, in a key of its own.
		{"POST", "/api/v1/driver/init", `{"driver":"memory","options":{"a\ue0001.b":"x","c":5},"x\ue000.y":1}`, []string{"body.options.c", "body.x\uE000.y"}},
	} {
		for range 5 {
			st, body := e.call(c.method, c.path, c.body)
			var p Problem
			if err := json.Unmarshal(body, &p); err != nil || st != 422 {
				t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, st, body)
				break
			}
			var got []string
			for _, d := range p.Errors {
				got = append(got, d.Location)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s %s %s: locations %q, want %q", c.method, c.path, c.body, got, c.want)
				break
			}
		}
	}
}

// TestKeyEscape: escaped keys hold no character that ends a segment of huma's path, come
// back as they were, and stay distinct.
func TestKeyEscape(t *testing.T) {
	keys := []string{"", "a", "a.b", "a[0]", "drivers.redis.password", "a\uE000b", "a\uE0001", "a\uE000.", "\uE000\uE000", "a..b[[", "\uE0002"}
	seen := map[string]string{}
	for _, k := range keys {
		esc := escapeKeys(map[string]any{k: map[string]any{k: 1}}).(map[string]any)
		if len(esc) != 1 {
			t.Fatalf("%q: %v", k, esc)
		}
		for ek, inner := range esc {
			if strings.ContainsAny(ek, ".[") {
				t.Errorf("%q escapes to %q", k, ek)
			}
			if back := unescapeLocation("body." + ek); back != "body."+k {
				t.Errorf("%q escapes to %q, back to %q", k, ek, back)
			}
			if other, dup := seen[ek]; dup {
				t.Errorf("%q and %q both escape to %q", k, other, ek)
			}
			seen[ek] = k
			if _, ok := inner.(map[string]any)[ek]; !ok {
				t.Errorf("%q: the inner object is not escaped: %v", k, inner)
			}
		}
	}
}
