package discovery

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd runs a one-member etcd in the test process on loopback ports, with its data in
// a temporary directory, until the test ends (as package config/source's tests do). It
// returns its client endpoint and a client.
func startEtcd(t *testing.T) (string, *clientv3.Client) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "ndbench-discovery-test"
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true // test data: speed over durability
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd failed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready after 30 s")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client.Host}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return client.Host, c
}

// etcdNode is one node's discoverer: its own client, as in its own process.
func etcdNode(t *testing.T, spec string, opts Options) *etcdSource {
	t.Helper()
	d, err := Parse(spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := d.(*etcdSource)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// register registers m through d until the returned cancel is called or the test ends.
func register(t *testing.T, d Discoverer, m Member) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := d.(Registrar).Register(ctx, m); err != nil {
		t.Fatalf("Register %s: %v", m.ID, err)
	}
	return cancel
}

func ids(ms []Member) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// waitIDs polls d until its members' ids are want, or fails after within.
func waitIDs(t *testing.T, d Discoverer, want []string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var got []string
	for time.Since(start) < within {
		ms, err := d.Members(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got = ids(ms); reflect.DeepEqual(got, want) {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("members %v after %v, want %v", got, within, want)
	return 0
}

func TestEtcd(t *testing.T) {
	endpoint, admin := startEtcd(t)
	spec := "etcd:" + endpoint

	t.Run("register, list, leave", func(t *testing.T) {
		opts := Options{EtcdPrefix: "/t/leave/", EtcdTTL: 30 * time.Second}
		observer := etcdNode(t, spec, opts)
		want := []Member{
			{ID: "node-a", Addr: "127.0.0.1:8081", Labels: map[string]string{"zone": "z1"}, Weight: 2},
			{ID: "node-b", Addr: "127.0.0.1:8082", Labels: map[string]string{"zone": "z2"}},
			{ID: "node-c", Addr: "[::1]:8083"},
		}
		cancels := map[string]context.CancelFunc{}
		for _, i := range []int{2, 0, 1} {
			cancels[want[i].ID] = register(t, etcdNode(t, spec, opts), want[i])
		}
		got, err := observer.Members(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Members = %+v\nwant %+v", got, want)
		}
		// Leaving revokes the lease: the key goes at once, not after the 30 s TTL.
		cancels["node-b"]()
		took := waitIDs(t, observer, []string{"node-a", "node-c"}, 5*time.Second)
		t.Logf("node-b gone %v after its context ended", took)
	})

	t.Run("a node that stops its keep-alive expires after the TTL", func(t *testing.T) {
		opts := Options{EtcdPrefix: "/t/expire/", EtcdTTL: 2 * time.Second}
		observer := etcdNode(t, spec, opts)
		register(t, etcdNode(t, spec, opts), Member{ID: "stays", Addr: "127.0.0.1:1"})
		dying := etcdNode(t, spec, opts)
		register(t, dying, Member{ID: "dies", Addr: "127.0.0.1:2"})
		// Close without ending Register's context: as when the process is killed, nobody
		// revokes the lease.
		if err := dying.Close(); err != nil {
			t.Fatal(err)
		}
		closed := time.Now()
		waitIDs(t, observer, []string{"dies", "stays"}, time.Second)
		waitIDs(t, observer, []string{"stays"}, 10*time.Second)
		took := time.Since(closed)
		t.Logf("expired %v after the keep-alive stopped (TTL 2 s)", took)
		if took < time.Second {
			t.Errorf("gone after %v: sooner than a 2 s lease can expire", took)
		}
		// The surviving node's keep-alive holds it beyond several TTLs.
		time.Sleep(3 * time.Second)
		waitIDs(t, observer, []string{"stays"}, time.Second)
	})

	t.Run("re-registers after losing its lease", func(t *testing.T) {
		opts := Options{EtcdPrefix: "/t/lost/", EtcdTTL: 2 * time.Second}
		observer := etcdNode(t, spec, opts)
		register(t, etcdNode(t, spec, opts), Member{ID: "n1", Addr: "127.0.0.1:1"})
		lease := func() clientv3.LeaseID {
			resp, err := admin.Get(context.Background(), "/t/lost/n1")
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) == 0 {
				return 0
			}
			return clientv3.LeaseID(resp.Kvs[0].Lease)
		}
		first := lease()
		if first == 0 {
			t.Fatal("registered without a lease")
		}
		// Someone revokes the lease (or it expired during a partition): the key goes.
		if _, err := admin.Revoke(context.Background(), first); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if l := lease(); l != 0 && l != first {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("not registered again within 10 s of losing the lease")
			}
			time.Sleep(50 * time.Millisecond)
		}
		waitIDs(t, observer, []string{"n1"}, time.Second)
	})

	t.Run("a key that is not a member is an error naming it", func(t *testing.T) {
		opts := Options{EtcdPrefix: "/t/bad/"}
		if _, err := admin.Put(context.Background(), "/t/bad/x", "not json"); err != nil {
			t.Fatal(err)
		}
		_, err := etcdNode(t, spec, opts).Members(context.Background())
		if err == nil || !strings.Contains(err.Error(), "key /t/bad/x: not a JSON member") {
			t.Errorf("error %v", err)
		}
		if _, err := admin.Put(context.Background(), "/t/bad/x", `{"addr": "nohost"}`); err != nil {
			t.Fatal(err)
		}
		_, err = etcdNode(t, spec, opts).Members(context.Background())
		if err == nil || !strings.Contains(err.Error(), "key /t/bad/x: member x: addr") {
			t.Errorf("error %v", err)
		}
	})

	t.Run("Register refuses a member it could not reach", func(t *testing.T) {
		d := etcdNode(t, spec, Options{EtcdPrefix: "/t/refuse/"})
		for _, m := range []Member{{ID: "", Addr: "h:1"}, {ID: "a/b", Addr: "h:1"}, {ID: "a", Addr: "h"}, {ID: "a", Addr: "h:1", Weight: -1}} {
			if err := d.Register(context.Background(), m); err == nil {
				t.Errorf("Register(%+v) succeeded", m)
			}
		}
	})

	t.Run("after Close", func(t *testing.T) {
		d := etcdNode(t, spec, Options{EtcdPrefix: "/t/closed/"})
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Members(context.Background()); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Members after Close: %v", err)
		}
		if err := d.Register(context.Background(), Member{ID: "a", Addr: "h:1"}); err == nil {
			t.Error("Register after Close succeeded")
		}
	})

	// Last: it turns authentication on for the whole server.
	t.Run("credentials in the endpoint URL", func(t *testing.T) {
		const password = "Pw" + secret
		ctx := context.Background()
		for _, step := range []func() error{
			func() error { _, err := admin.RoleAdd(ctx, "root"); return err },
			func() error { _, err := admin.UserAdd(ctx, "root", password); return err },
			func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
			func() error { _, err := admin.AuthEnable(ctx); return err },
		} {
			if err := step(); err != nil {
				t.Fatalf("enable auth: %v", err)
			}
		}
		opts := Options{EtcdPrefix: "/t/auth/", EtcdDialTimeout: 3 * time.Second}
		d := etcdNode(t, "etcd:http://root:"+password+"@"+endpoint, opts)
		if strings.Contains(d.String(), password) {
			t.Errorf("String() shows the password: %s", d)
		}
		register(t, d, Member{ID: "n1", Addr: "127.0.0.1:1"})
		ms, err := d.Members(ctx)
		if err != nil || !reflect.DeepEqual(ids(ms), []string{"n1"}) {
			t.Errorf("Members = %v, %v", ms, err)
		}
		wrong := etcdNode(t, "etcd:http://root:"+password+"x@"+endpoint, opts)
		_, err = wrong.Members(ctx)
		if err == nil {
			t.Fatal("a wrong password was accepted")
		}
		t.Logf("wrong password: %v", err)
		if strings.Contains(err.Error(), password) {
			t.Errorf("the error shows the password: %v", err)
		}
		var _ io.Closer = wrong
	})
}
