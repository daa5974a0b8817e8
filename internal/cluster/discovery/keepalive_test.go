package discovery

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blackHole forwards connections to target until cut; from then on it keeps every
// connection open and forwards nothing, either way, and accepts new ones the same: a
// partition that drops packets, where neither side sees a reset.
type blackHole struct {
	addr string
	cut  atomic.Bool
}

func newBlackHole(t *testing.T, target string) *blackHole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{addr: ln.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	forward := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			if b.cut.Load() {
				continue // swallowed: the peer waits for an answer that never comes
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if b.cut.Load() {
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, u)
			mu.Unlock()
			go forward(u, c)
			go forward(c, u)
		}
	}()
	return b
}

// One of two etcd endpoints cut off silently (no reset, no refusal) is noticed by the
// client's keepalive within EtcdKeepAliveTime + EtcdKeepAliveTimeout: its connection is
// dropped and every lookup goes to the endpoint that answers. Without keepalive the dead
// connection stayed in the client's rotation for good, and about every other lookup
// waited on it until its deadline.
func TestSilentlyCutEtcdIsNoticedByKeepalive(t *testing.T) {
	endpoint, _ := startEtcd(t)
	cutLink, goodLink := newBlackHole(t, endpoint), newBlackHole(t, endpoint)
	node := etcdNode(t, "etcd:"+cutLink.addr+","+goodLink.addr, Options{EtcdPrefix: "/t/keepalive/", EtcdDialTimeout: 2 * time.Second})
	register(t, node, Member{ID: "n1", Addr: "127.0.0.1:1"})
	lookup := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// Whether n1 is listed is not the point: its lease may have been kept alive over
		// the cut link, and lapse.
		_, err := node.Members(ctx)
		return err
	}
	for range 4 {
		if err := lookup(); err != nil {
			t.Fatalf("before the cut: %v", err)
		}
	}

	cutLink.cut.Store(true)
	cut := time.Now()
	// The bound, plus room for a loaded machine.
	bound := EtcdKeepAliveTime + EtcdKeepAliveTimeout + 5*time.Second
	var lastFail time.Duration
	fails := 0
	for ok := 0; ok < 8; {
		if time.Since(cut) > bound+20*time.Second {
			break
		}
		if err := lookup(); err != nil {
			lastFail, ok = time.Since(cut), 0
			fails++
			continue
		}
		ok++
	}
	t.Logf("%d lookups failed after the cut, the last %v after it", fails, lastFail.Round(time.Millisecond))
	if lastFail > bound {
		t.Errorf("a lookup still waited on the cut endpoint %v after the cut; want the cut noticed within %v (keepalive %v + %v)",
			lastFail, bound, EtcdKeepAliveTime, EtcdKeepAliveTimeout)
	}
}
