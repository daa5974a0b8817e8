package discovery

import (
	"context"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// zone is what the test DNS server knows: records by lower-case absolute name and type.
// Every other name is NXDOMAIN; a known name asked for another type answers no records.
type zone map[string][]dns.RR

func rr(t *testing.T, text string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(text)
	if err != nil {
		t.Fatalf("record %q: %v", text, err)
	}
	return r
}

// headlessService is what Kubernetes' DNS serves for a headless Service "ndbench" in
// namespace "default" with a named port "http" over two pods of a StatefulSet: SRV
// records for the named port, one A record per pod name, and A records of the Service
// name itself. ndbench-1 is dual-stack. "plain" has only A/AAAA records.
func headlessService(t *testing.T) zone {
	z := zone{}
	for _, text := range []string{
		"_http._tcp.ndbench.default.svc.cluster.local. 30 IN SRV 0 50 8080 ndbench-0.ndbench.default.svc.cluster.local.",
		"_http._tcp.ndbench.default.svc.cluster.local. 30 IN SRV 0 50 8080 ndbench-1.ndbench.default.svc.cluster.local.",
		"ndbench-0.ndbench.default.svc.cluster.local. 30 IN A 10.1.0.10",
		"ndbench-1.ndbench.default.svc.cluster.local. 30 IN AAAA fd00::11",
		"ndbench-1.ndbench.default.svc.cluster.local. 30 IN A 10.1.0.11",
		"ndbench.default.svc.cluster.local. 30 IN A 10.1.0.11",
		"ndbench.default.svc.cluster.local. 30 IN A 10.1.0.10",
		"plain.example. 30 IN AAAA fd00::20",
		"plain.example. 30 IN A 192.0.2.20",
		// An SRV target with no address: a pod that is gone.
		"_http._tcp.broken.example. 30 IN SRV 0 50 8080 gone.example.",
		"gone.example. 30 IN TXT \"no address\"",
	} {
		r := rr(t, text)
		name := strings.ToLower(r.Header().Name)
		z[name] = append(z[name], r)
	}
	return z
}

// startDNS serves z over UDP on a free loopback port until the test ends and returns its
// address and a function that lists the questions asked so far.
func startDNS(t *testing.T, z zone) (string, func() []string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		m.RecursionAvailable = true
		for _, q := range req.Question {
			mu.Lock()
			asked = append(asked, dns.TypeToString[q.Qtype]+" "+q.Name)
			mu.Unlock()
			rrs, known := z[strings.ToLower(q.Name)]
			if !known {
				m.Rcode = dns.RcodeNameError
				continue
			}
			for _, r := range rrs {
				if r.Header().Rrtype == q.Qtype {
					m.Answer = append(m.Answer, r)
				}
			}
		}
		_ = w.WriteMsg(m)
	})
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: handler, NotifyStartedFunc: func() { close(started) }}
	done := make(chan error, 1)
	go func() { done <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("DNS server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("DNS server shutdown: %v", err)
		}
		<-done
	})
	return pc.LocalAddr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

func members(t *testing.T, spec string, opts Options) ([]Member, error) {
	t.Helper()
	d, err := Parse(spec, opts)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.Members(ctx)
}

func TestDNSHeadlessServiceSRV(t *testing.T) {
	server, asked := startDNS(t, headlessService(t))
	got, err := members(t, "dns:_http._tcp.ndbench.default.svc.cluster.local", Options{DNSServer: server})
	if err != nil {
		t.Fatal(err)
	}
	// One member per SRV target, on the SRV port; the dual-stack pod by its IPv4 address.
	want := []Member{
		{ID: "ndbench-0.ndbench.default.svc.cluster.local", Addr: "10.1.0.10:8080"},
		{ID: "ndbench-1.ndbench.default.svc.cluster.local", Addr: "10.1.0.11:8080"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Members = %+v\nwant %+v", got, want)
	}
	if q := asked(); !contains(q, "SRV _http._tcp.ndbench.default.svc.cluster.local.") {
		t.Errorf("the server was not asked for the SRV records; questions: %v", q)
	}
}

func TestDNSFallsBackToAddresses(t *testing.T) {
	server, asked := startDNS(t, headlessService(t))
	tests := []struct {
		spec string
		want []Member
	}{
		// The Service name itself has no SRV records: its A records, on the port given.
		{"dns:ndbench.default.svc.cluster.local:9090", []Member{
			{ID: "10.1.0.10:9090", Addr: "10.1.0.10:9090"},
			{ID: "10.1.0.11:9090", Addr: "10.1.0.11:9090"},
		}},
		// A and AAAA, on the default port.
		{"dns:plain.example", []Member{
			{ID: "192.0.2.20:8080", Addr: "192.0.2.20:8080"},
			{ID: "[fd00::20]:8080", Addr: "[fd00::20]:8080"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := members(t, tt.spec, Options{DNSServer: server})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Members = %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if q := asked(); !contains(q, "SRV plain.example.") || !contains(q, "A plain.example.") {
		t.Errorf("want an SRV question, then A/AAAA ones; questions: %v", q)
	}
}

func TestDNSErrors(t *testing.T) {
	server, _ := startDNS(t, headlessService(t))
	t.Run("NXDOMAIN", func(t *testing.T) {
		_, err := members(t, "dns:nothing.example", Options{DNSServer: server})
		if err == nil {
			t.Fatal("no error")
		}
		t.Log(err)
		for _, w := range []string{"dns:nothing.example via " + server, "no SRV, A or AAAA records for nothing.example", "no such host"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not contain %q", err, w)
			}
		}
	})
	t.Run("SRV target without address", func(t *testing.T) {
		_, err := members(t, "dns:_http._tcp.broken.example", Options{DNSServer: server})
		if err == nil || !strings.Contains(err.Error(), "resolve SRV target gone.example") {
			t.Errorf("error %v, want one naming the target", err)
		}
	})
	t.Run("no DNS server there", func(t *testing.T) {
		// A port nobody listens on: the lookup fails, which is not "no records", so
		// there is no fallback that would hide it.
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := pc.LocalAddr().String()
		pc.Close()
		d, err := Parse("dns:plain.example", Options{DNSServer: dead})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = d.Members(ctx)
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "SRV lookup") {
			t.Errorf("error %v, want the SRV lookup's failure", err)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
