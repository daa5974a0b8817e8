package api

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
)

// TestStatusShowsAFailingEtcdSource: a service wired like `ndbench serve --config-etcd`
// whose etcd stops says so in GET /api/v1/status (configSources: failing, the error,
// since when), and clears it once etcd is back. Before, the watch reconnected silently and
// the status said nothing of its source.
func TestStatusShowsAFailingEtcdSource(t *testing.T) {
	srvEtcd := etcdtest.New(t)
	const prefix = "/ndbench/outage/"
	ctx := context.Background()
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	store := config.NewStore(snap)
	log := slog.New(slog.DiscardHandler)
	inst := node.New(store, log)
	src, err := source.OpenEtcd(ctx, store, source.EtcdOptions{Endpoints: []string{srvEtcd.Endpoint}, Prefix: prefix,
		Timeout: time.Second, OnError: inst.RecordError})
	if err != nil {
		t.Fatal(err)
	}
	srcCtx, stopSource := context.WithCancel(ctx)
	srcDone := make(chan error, 1)
	go func() { srcDone <- src.Run(srcCtx) }()
	srv, err := New(Options{Instance: inst, Token: testToken, Logger: log, Version: "test",
		ConfigSources: func() []source.Status { return []source.Status{src.Status()} }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		stopSource()
		if err := <-srcDone; err != nil {
			t.Errorf("etcd source Run: %v", err)
		}
		ts.CloseClientConnections()
		srv.Close()
		ts.Close()
		_ = inst.Close()
	})
	e := &env{t: t, inst: inst, srv: srv, ts: ts}
	status := func() source.Status {
		t.Helper()
		var body StatusBody
		e.must(200, "GET", "/api/v1/status", nil, &body)
		if len(body.ConfigSources) != 1 {
			t.Fatalf("status lists %d config sources, want the etcd one", len(body.ConfigSources))
		}
		return body.ConfigSources[0].Status
	}
	waitStatus := func(what string, ok func(source.Status) bool) source.Status {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if st := status(); ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /api/v1/status: %s not within 20 s: %+v", what, status())
			}
		}
	}
	if st := status(); st.Failing || !strings.Contains(st.Source, prefix) {
		t.Fatalf("a healthy etcd source: %+v", st)
	}

	down := time.Now()
	srvEtcd.Stop()
	st := waitStatus("the etcd source failing", func(s source.Status) bool { return s.Failing })
	if !strings.Contains(st.Error, srvEtcd.Endpoint) || st.FailingSince.Before(down) {
		t.Errorf("failing: error %q, since %v; want the endpoint %s named, since after %v", st.Error, st.FailingSince, srvEtcd.Endpoint, down)
	}

	srvEtcd.Restart()
	st = waitStatus("the failure cleared", func(s source.Status) bool { return !s.Failing })
	if !st.FailingSince.IsZero() {
		t.Errorf("recovered, still failing since %v", st.FailingSince)
	}
}
