package discovery

import (
	"context"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// startEtcd starts an etcd server for the test and returns its endpoint and a client.
func startEtcd(t *testing.T) (string, *clientv3.Client) { return etcdtest.Start(t) }

// leaseOf returns the lease of key, 0 when the key does not exist.
func leaseOf(t *testing.T, c *clientv3.Client, key string) clientv3.LeaseID {
	t.Helper()
	// Generous: after etcd restarts, the client reconnects at its next backoff step.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
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
		lease := func() clientv3.LeaseID { return leaseOf(t, admin, "/t/lost/n1") }
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

	t.Run("a key deleted by hand is put back under its lease", func(t *testing.T) {
		opts := Options{EtcdPrefix: "/t/deleted/", EtcdTTL: 30 * time.Second}
		register(t, etcdNode(t, spec, opts), Member{ID: "n1", Addr: "127.0.0.1:1"})
		first := leaseOf(t, admin, "/t/deleted/n1")
		if _, err := admin.Delete(context.Background(), "/t/deleted/n1"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for leaseOf(t, admin, "/t/deleted/n1") != first {
			if time.Now().After(deadline) {
				t.Fatal("not put back within 5 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
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

// tcpProxy forwards loopback connections to target; down cuts every connection and stops
// listening (connections are refused), up listens again on the same address; while
// silent, connections are accepted and never answered (a hung server or a partition).
type tcpProxy struct {
	t      *testing.T
	target string
	addr   string
	silent atomic.Bool

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, addr: "127.0.0.1:0"}
	p.up()
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) up() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.silent.Load() {
				p.mu.Lock()
				p.conns = append(p.conns, c)
				p.mu.Unlock()
				continue
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
}

func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestEtcdOutage cuts the node off etcd for longer than the TTL: the lease expires, the
// node registers again once etcd is reachable, and Close does not hang on a registration
// that waits for etcd.
func TestEtcdOutage(t *testing.T) {
	endpoint, admin := startEtcd(t)
	proxy := newTCPProxy(t, endpoint)
	opts := Options{EtcdPrefix: "/t/outage/", EtcdTTL: 2 * time.Second, EtcdDialTimeout: 2 * time.Second}
	node := etcdNode(t, "etcd:"+proxy.addr, opts)
	register(t, node, Member{ID: "n1", Addr: "127.0.0.1:1"})
	first := leaseOf(t, admin, "/t/outage/n1")
	if first == 0 {
		t.Fatal("not registered")
	}

	proxy.down()
	time.Sleep(3 * time.Second) // past the TTL
	if l := leaseOf(t, admin, "/t/outage/n1"); l != 0 {
		t.Fatalf("still registered (lease %x) 3 s into the outage with a 2 s TTL", l)
	}
	proxy.up()
	back := time.Now()
	deadline := back.Add(15 * time.Second)
	for {
		if l := leaseOf(t, admin, "/t/outage/n1"); l != 0 && l != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not registered again within 15 s of etcd's return")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("registered again %v after etcd's return", time.Since(back))

	// Cut off again, etcd now silent rather than refusing, the registration waiting for
	// it: Close returns promptly.
	proxy.down()
	proxy.silent.Store(true)
	proxy.up()
	time.Sleep(3 * time.Second)
	closed := make(chan error, 1)
	go func() { closed <- node.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs while etcd is unreachable")
	}
}
