package http

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

func TestParseSourceAddrs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the addresses joined by commas, or "error"
	}{
		{"", ""},
		{" , ", ""},
		{"127.0.0.2", "127.0.0.2"},
		{"127.0.0.2, 127.0.0.3,127.0.0.2", "127.0.0.2,127.0.0.3"},
		{"::1", "::1"},
		{"::ffff:127.0.0.5", "127.0.0.5"},
		// A block is its host addresses: no network or broadcast address.
		{"127.0.1.0/30", "127.0.1.1,127.0.1.2"},
		{"127.0.1.9/29", "127.0.1.9,127.0.1.10,127.0.1.11,127.0.1.12,127.0.1.13,127.0.1.14"},
		{"127.0.1.4/31", "127.0.1.4,127.0.1.5"},
		{"127.0.1.4/32", "127.0.1.4"},
		{"fd00::/126", "fd00::,fd00::1,fd00::2,fd00::3"},
		{"127.0.0.0/22", fmt.Sprint(1022, " addresses")},
		{"127.0.0.0/21", "error"}, // 2,046 addresses: over the cap
		{"127.0.0.0/8", "error"},
		{"127.0.0.0/22,127.0.8.1,127.0.8.2,127.0.8.3", "error"},
		{"127.0.0.256", "error"},
		{"localhost", "error"},
		{"127.0.0.1/33", "error"},
		{"0.0.0.0", "error"},
		{"224.0.0.1", "error"},
		{"fe80::1%eth0", "error"},
	} {
		got, err := parseSourceAddrs(tc.in)
		var s string
		switch {
		case err != nil:
			s = "error"
			var fes driver.FieldErrors
			if fes, _ = driver.AsFieldErrors(err); !containsField(fes, "sourceAddrs") || !strings.Contains(err.Error(), "CIDR") {
				t.Errorf("%q: %v, want a field error naming sourceAddrs and what it allows", tc.in, err)
			}
		case len(got) > 8:
			s = fmt.Sprint(len(got), " addresses")
		default:
			var parts []string
			for _, a := range got {
				parts = append(parts, a.String())
			}
			s = strings.Join(parts, ",")
		}
		if s != tc.want {
			t.Errorf("parseSourceAddrs(%q) = %s, want %s", tc.in, s, tc.want)
		}
	}
	if _, err := driver.NewOptions("http", map[string]string{"sourceAddrs": "127.0.0.1/8"}); err == nil || !strings.Contains(err.Error(), "sourceAddrs") {
		t.Errorf("options with sourceAddrs=127.0.0.1/8: %v, want a field error naming sourceAddrs", err)
	}
}

// TestSourceAddrsNotOfThisMachine: an address the machine does not have fails Init,
// naming the option and the address, not every later connection.
func TestSourceAddrsNotOfThisMachine(t *testing.T) {
	_, _, err := driver.Open(context.Background(), "http", map[string]string{
		"url": "http://127.0.0.1:1/", "sourceAddrs": "127.0.0.1,192.0.2.77", // TEST-NET-1: nobody's
	})
	if err == nil || !strings.Contains(err.Error(), "sourceAddrs") || !strings.Contains(err.Error(), "192.0.2.77") {
		t.Fatalf("Init with a foreign source address: %v, want an error naming sourceAddrs and 192.0.2.77", err)
	}
}

// TestConnectionsFromEachSourceAddress: with sourceAddrs, the server sees the driver's
// connections come from each of the addresses, spread evenly. Linux answers on every
// 127.x.y.z; other systems need aliases (docs/drivers), so there the test uses the one
// address every system has.
func TestConnectionsFromEachSourceAddress(t *testing.T) {
	addrs := []string{"127.0.0.1"}
	if runtime.GOOS == "linux" {
		addrs = []string{"127.0.0.2", "127.0.0.3", "127.0.3.4"}
	}
	const perAddr = 3
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			n := perAddr * len(addrs)
			// The server holds every request until n have arrived, so each needs its own
			// connection: n connections, dialled in turn from the addresses.
			var mu sync.Mutex
			conns := map[string]map[string]bool{} // source IP -> source ports
			arrived, release := 0, make(chan struct{})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				host, port, _ := net.SplitHostPort(r.RemoteAddr)
				mu.Lock()
				if conns[host] == nil {
					conns[host] = map[string]bool{}
				}
				conns[host][port] = true
				if arrived++; arrived == n {
					close(release)
				}
				mu.Unlock()
				<-release
			}))
			defer ts.Close()
			d, _, err := driver.Open(context.Background(), "http", map[string]string{
				"engine": engine, "url": ts.URL, "protocol": "http1", "readCheck": "none",
				"sourceAddrs": strings.Join(addrs, ","),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := d.Read(context.Background(), fmt.Sprint("k", i)); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			for _, a := range addrs {
				if got := len(conns[a]); got != perAddr {
					t.Errorf("connections from %s: %d, want %d (all seen: %v)", a, got, perAddr, conns)
				}
			}
			if len(conns) != len(addrs) {
				t.Errorf("connections came from %d addresses, want %d: %v", len(conns), len(addrs), conns)
			}
		})
	}
}
