package memcached

import (
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/ndbench/ndbench/driver"
)

func TestRegisteredWithDefaults(t *testing.T) {
	opts, err := driver.NewOptions("memcached", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := opts.(*Options)
	if !reflect.DeepEqual(o.Servers, []string{"127.0.0.1:11211"}) || o.MaxIdleConns != 64 ||
		o.WriteSuccess != "any" || o.TTL != 0 || o.Timeouts.Request != time.Second {
		t.Errorf("defaults = %+v", o)
	}
}

func TestParseZones(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    string
		servers []string
		want    []zoneSpec
		field   string
	}{
		{"servers only", "", []string{"h1:1", "h2:2"}, []zoneSpec{{"default", []string{"h1:1", "h2:2"}}}, ""},
		{"two zones", "a=h1:1,h2:2;b=h3:3", nil, []zoneSpec{{"a", []string{"h1:1", "h2:2"}}, {"b", []string{"h3:3"}}}, ""},
		{"spaces and trailing separators", " a = h1:1 , ; b=h3:3 ;", nil, []zoneSpec{{"a", []string{"h1:1"}}, {"b", []string{"h3:3"}}}, ""},
		{"zones replace servers", "z=h9:9", []string{"h1:1"}, []zoneSpec{{"z", []string{"h9:9"}}}, ""},
		{"missing name", "=h1:1", nil, nil, "zones"},
		{"missing equals", "h1:1", nil, nil, "zones"},
		{"no port", "a=h1", nil, nil, "zones"},
		{"empty zone", "a=;b=h:1", nil, nil, "zones"},
		{"duplicate", "a=h:1;a=h:2", nil, nil, "zones"},
		{"only separators", ";;", nil, nil, "zones"},
		{"no servers", "", nil, nil, "servers"},
		{"bad server", "", []string{"nohost"}, nil, "servers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseZones(tc.spec, tc.servers)
			if tc.field != "" {
				fes, ok := driver.AsFieldErrors(err)
				if !ok || fes[0].Field != tc.field {
					t.Fatalf("err = %v, want a field error on %s", err, tc.field)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseZones(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
			}
		})
	}
}

func TestLocalIndex(t *testing.T) {
	zones := []zoneSpec{{name: "a"}, {name: "b"}}
	for _, tc := range []struct {
		name string
		want int
		ok   bool
	}{{"", 0, true}, {"a", 0, true}, {"b", 1, true}, {"c", 0, false}} {
		got, err := localIndex(zones, tc.name)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("localIndex(%q) = %d, %v", tc.name, got, err)
		}
	}
}

func TestExpiration(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		ttl  time.Duration
		want int32
	}{
		{0, 0},
		{time.Millisecond, 1},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{time.Hour, 3600},
		{30 * 24 * time.Hour, 30 * 24 * 3600},
		{31 * 24 * time.Hour, int32(now.Unix()) + 31*24*3600},
	} {
		if got := expiration(tc.ttl, now); got != tc.want {
			t.Errorf("expiration(%v) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}

func TestClassOf(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	for _, tc := range []struct {
		err  error
		want driver.Class
	}{
		{&memcache.ConnectTimeoutError{Addr: addr}, driver.ClassTimeout},
		{memcache.ErrNoServers, driver.ClassUnavailable},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), driver.ClassUnavailable},
		{io.EOF, driver.ClassUnavailable},
		{memcache.ErrMalformedKey, driver.ClassRejected},
		{memcache.ErrServerError, driver.ClassOther},
		{errors.New(`memcache: unexpected response line from "set": "SERVER_ERROR object too large for cache\r\n"`), driver.ClassRejected},
		{errors.New(`memcache: unexpected response line from "set": "SERVER_ERROR out of memory storing object\r\n"`), driver.ClassThrottled},
		{errors.New(`memcache: unexpected response line: "CLIENT_ERROR bad data chunk\r\n"`), driver.ClassRejected},
		{errors.New(`memcache: unexpected response line: "SERVER_ERROR something\r\n"`), driver.ClassOther},
		// twemproxy's replies when a backend is down or does not answer in time.
		{errors.New(`memcache: unexpected response line from "set": "SERVER_ERROR Connection refused\r\n"`), driver.ClassUnavailable},
		{errors.New(`memcache: unexpected response line: "SERVER_ERROR Connection reset by peer\r\n"`), driver.ClassUnavailable},
		{errors.New(`memcache: unexpected response line from "set": "SERVER_ERROR Host is down\r\n"`), driver.ClassUnavailable},
		{errors.New(`memcache: unexpected response line from "set": "SERVER_ERROR Connection timed out\r\n"`), driver.ClassTimeout},
	} {
		if got := driver.Classify(classify(tc.err)); got != tc.want {
			t.Errorf("class of %v = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestCloseWithoutInit(t *testing.T) {
	if err := (&Driver{}).Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNoOperationAfterClose: gomemcache clients dial again when used after Close, so the
// driver must refuse operations itself (the conformance suite's Closed check found it
// reconnecting). The listener proves nothing reaches the network.
func TestNoOperationAfterClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	d := &Driver{opts: Options{MaxValueSize: 100}, zones: []*zone{{name: "default", addrs: []string{addr}, client: memcache.New(addr)}}}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(t.Context(), "k"); driver.Classify(err) != driver.ClassUnavailable {
		t.Errorf("Read after Close: %v, want an unavailable error", err)
	}
	if err := d.Write(t.Context(), "k", []byte("v")); driver.Classify(err) != driver.ClassUnavailable {
		t.Errorf("Write after Close: %v, want an unavailable error", err)
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Error("an operation after Close connected to the server")
	}
}

func TestInitUnreachableIsUnavailable(t *testing.T) {
	_, _, err := driver.Open(t.Context(), "memcached", map[string]string{"servers": "127.0.0.1:1"})
	if err == nil {
		t.Fatal("Open against a closed port succeeded")
	}
	if c := driver.Classify(err); c != driver.ClassUnavailable {
		t.Errorf("class = %v, want unavailable (err %v)", c, err)
	}
}

// TestOptionsAreValidatedBeforeInit: option rules Init enforces (zone syntax, server
// addresses, localZone naming a zone) are checked when the options are built, so the
// config store rejects them instead of accepting a change the driver then refuses.
func TestOptionsAreValidatedBeforeInit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]string
		field  string // "" = valid
	}{
		{"defaults", nil, ""},
		{"local zone among the zones", map[string]string{"zones": "a=h:1;b=h:2", "localZone": "b"}, ""},
		{"local zone of servers is default", map[string]string{"localZone": "default"}, ""},
		{"local zone not a zone", map[string]string{"zones": "a=h:1;b=h:2", "localZone": "c"}, "localZone"},
		{"local zone without zones", map[string]string{"localZone": "us-east-1a"}, "localZone"},
		{"bad zones", map[string]string{"zones": "a=nohostport"}, "zones"},
		{"bad server", map[string]string{"servers": "nohost"}, "servers"},
		{"no servers", map[string]string{"servers": ""}, "servers"},
		{"direct with one zone", map[string]string{"zones": "a=h:1,h:2", "client": "direct"}, ""},
		{"direct with two zones", map[string]string{"zones": "a=h:1;b=h:2", "client": "direct"}, "client"},
		{"unknown client", map[string]string{"client": "libmemcached"}, "client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := driver.NewOptions("memcached", tc.values)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok || fes[0].Field != tc.field || fes[0].Allowed == "" {
				t.Fatalf("err = %v, want a field error on %s", err, tc.field)
			}
		})
	}
}

// TestPick holds pick to gomemcache's ServerList (a server listed twice included) on keys
// of NDBench's, memtier's and redis-benchmark's shapes, so both clients put a key on the
// same server.
func TestPick(t *testing.T) {
	for _, addrs := range [][]string{
		{"127.0.0.1:11211"},
		{"127.0.0.1:11211", "127.0.0.2:11211"},
		{"127.0.0.1:11211", "127.0.0.2:11211", "127.0.0.3:11211", "127.0.0.1:11211"},
	} {
		var sl memcache.ServerList
		if err := sl.SetServers(addrs...); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			for _, key := range []string{"T" + strconv.Itoa(i), "key:" + fmt.Sprintf("%012d", i), "memtier-" + strconv.Itoa(i), strings.Repeat("k", i%251)} {
				want, err := sl.PickServer(key)
				if err != nil {
					t.Fatal(err)
				}
				if got := addrs[pick(key, len(addrs))]; got != want.String() {
					t.Fatalf("%d servers, key %q: pick says %s, gomemcache %s", len(addrs), key, got, want)
				}
			}
		}
	}
}

// TestPipelinesFollowTheClient: the registry says which options give pipelines, so the
// configuration accepts workload.pipeline > 1 exactly where Init will give them.
func TestPipelinesFollowTheClient(t *testing.T) {
	def, ok := driver.Lookup("memcached")
	if !ok {
		t.Fatal("memcached not registered")
	}
	for _, tc := range []struct {
		values map[string]string
		want   bool
	}{
		{nil, true},
		{map[string]string{"client": "direct"}, true},
		{map[string]string{"client": "gomemcache"}, false},
		{map[string]string{"zones": "a=h:1"}, true},
		{map[string]string{"zones": "a=h:1;b=h:2"}, false},
		{map[string]string{"zones": "a=h:1;b=h:2", "client": "gomemcache"}, false},
	} {
		opts, err := driver.NewOptions("memcached", tc.values)
		if err != nil {
			t.Fatal(err)
		}
		if got := def.Pipelines(opts); got != tc.want {
			t.Errorf("%v: pipelines %v, want %v", tc.values, got, tc.want)
		}
	}
}
