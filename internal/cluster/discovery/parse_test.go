package discovery

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// secret is the password the redaction cases hide; it must appear in no output.
const secret = "S3cretPW"

func TestParseGoodSpecs(t *testing.T) {
	tests := []struct {
		spec string
		opts Options
		want string // String()
	}{
		{"static:127.0.0.1:8080", Options{}, "static:127.0.0.1:8080"},
		{"static:b.example:9000, a.example:9001", Options{}, "static:b.example:9000,a.example:9001"},
		{"static:[::1]:8080,node1", Options{}, "static:[::1]:8080,node1:8080"},
		{"static:node1", Options{DefaultPort: 9999}, "static:node1:9999"},
		{"static:::1", Options{}, "static:[::1]:8080"},
		{"dns:_http._tcp.ndbench.default.svc.cluster.local", Options{}, "dns:_http._tcp.ndbench.default.svc.cluster.local"},
		{"dns:ndbench.default.svc.cluster.local.:9090", Options{}, "dns:ndbench.default.svc.cluster.local.:9090"},
		{"dns:ndbench", Options{DNSServer: "127.0.0.1:5353"}, "dns:ndbench via 127.0.0.1:5353"},
		{"dns:ndbench", Options{DNSServer: "10.0.0.10"}, "dns:ndbench via 10.0.0.10:53"},
		{"etcd:127.0.0.1:2379", Options{}, "etcd:127.0.0.1:2379 /ndbench/nodes/"},
		{"etcd:https://a:2379,https://b:2379", Options{EtcdPrefix: "/x"}, "etcd:https://a:2379,https://b:2379 /x/ (TLS)"},
		{"etcd:http://root:" + secret + "@a:2379,http://root:" + secret + "@b:2379", Options{},
			"etcd:http://root:xxxxx@a:2379,http://root:xxxxx@b:2379 /ndbench/nodes/ (user root)"},
		{"etcd:root:" + secret + "@a:2379", Options{}, "etcd:root:xxxxx@a:2379 /ndbench/nodes/ (user root)"},
		{"file:/etc/ndbench/clusters.json", Options{}, "file:/etc/ndbench/clusters.json"},
		{"file:clusters.json", Options{}, "file:clusters.json"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			d, err := Parse(tt.spec, tt.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			defer d.(io.Closer).Close()
			if got := d.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if strings.Contains(d.String(), secret) {
				t.Errorf("String() shows the password: %s", d)
			}
		})
	}
}

func TestParseStaticMembers(t *testing.T) {
	d, err := Parse("static:b:2,a:1,b:2,[::1]:3", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Member{{ID: "[::1]:3", Addr: "[::1]:3"}, {ID: "a:1", Addr: "a:1"}, {ID: "b:2", Addr: "b:2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Members = %+v, want %+v (sorted by ID, each once)", got, want)
	}
	// The caller owns what it gets.
	got[0].ID = "changed"
	again, _ := d.Members(context.Background())
	if again[0].ID != "[::1]:3" {
		t.Error("Members shares its slice with the caller")
	}
}

func TestParseBadSpecs(t *testing.T) {
	allowed := "allowed: static, dns, etcd, file"
	tests := []struct {
		spec string
		opts Options
		want []string // fragments of the error
	}{
		{"foo:x", Options{}, []string{`--discovery "foo:x": unknown scheme "foo"`, allowed}},
		{"etdc:http://root:" + secret + "@a:2379", Options{}, []string{`--discovery "etdc:http://root:xxxxx@a:2379": unknown scheme "etdc"`, allowed}},
		{"Static:a:1", Options{}, []string{`unknown scheme "Static"`, allowed}},
		{"", Options{}, []string{"--discovery", "no scheme", "static, dns, etcd, file"}},
		{"a.example", Options{}, []string{"--discovery", "no scheme", "static, dns, etcd, file"}},
		{"static:", Options{}, []string{"--discovery", `empty target after "static:"`}},
		{"etcd:  ", Options{}, []string{"--discovery", `empty target after "etcd:"`}},
		{"static:a:1,,b:2", Options{}, []string{"--discovery", "static member 2", "empty address"}},
		{"static:a:0", Options{}, []string{"--discovery", "static member 1", `port "0"`, "1..65535"}},
		{"static:a:65536", Options{}, []string{"port \"65536\"", "1..65535"}},
		{"static:a:http", Options{}, []string{"port \"http\"", "1..65535"}},
		{"static::8080", Options{}, []string{"no host"}},
		{"static:a:b:c", Options{}, []string{`address "a:b:c": want host:port`}},
		{"static:http://a:80", Options{}, []string{"want host:port"}},
		{"dns:", Options{}, []string{"empty target"}},
		{"dns:name:0", Options{}, []string{"--discovery", "dns:", `port "0"`, "dns:NAME or dns:NAME:PORT"}},
		{"dns:name:x", Options{}, []string{`port "x"`}},
		{"dns:bad name", Options{}, []string{"not allowed in a DNS name"}},
		{"dns:a..b", Options{}, []string{"empty or over-long label"}},
		{"dns:" + strings.Repeat("a", 64) + ".b", Options{}, []string{"empty or over-long label"}},
		{"dns:name", Options{DNSServer: "127.0.0.1:99999"}, []string{"DNS server", "1..65535"}},
		{"etcd:ftp://a:2379", Options{}, []string{"etcd endpoint 1", `scheme "ftp"`, "http or https"}},
		{"etcd:a:2379,b", Options{}, []string{"etcd endpoint 2", "want host:port"}},
		{"etcd:http://a:2379/v3/kv", Options{}, []string{"no path"}},
		{"etcd:https://a:2379,b:2379", Options{}, []string{"etcd endpoint 2", "mixes https and plain"}},
		{"etcd:http://u@a:2379", Options{}, []string{"both a user and a password"}},
		{"etcd:a:2379", Options{EtcdTTL: -time.Second}, []string{"TTL", "positive"}},
		{"static:a:1", Options{DefaultPort: 70000}, []string{"default port"}},
		{"etcd:http://u:p@a:2379,http://v:q@b:2379", Options{}, []string{"credentials differ"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			d, err := Parse(tt.spec, tt.opts)
			if err == nil {
				t.Fatalf("Parse accepted it: %s", d)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "--discovery ") {
				t.Errorf("error %q does not name the flag first", err)
			}
		})
	}
}

// TestParseNeverShowsAPassword puts a password in every place a spec can carry one, valid
// or not; it must appear in no error and no String().
func TestParseNeverShowsAPassword(t *testing.T) {
	specs := []string{
		"etdc:http://root:" + secret + "@a:2379",           // mistyped scheme
		"etdc:root:" + secret + "@a:2379",                  // mistyped scheme, no URL
		"root:" + secret + "@a:2379",                       // scheme forgotten
		"etcd:http://root:" + secret + "@a:99999",          // bad port
		"etcd:http://root:" + secret + "@a:2379/path",      // path
		"etcd:http://root:" + secret + "@a:2379,b:0",       // second endpoint bad
		"etcd:http://root:" + secret + "@a:2379,ftp://b:1", // second endpoint scheme
		"etcd:http://root:" + secret + "@:2379",            // no host
		"etcd:http://root:" + secret + "%zz@a:2379",        // bad escape
		"etcd:http://root:" + secret + "@a b:2379",         // space in host
		"etcd:ftp://root:" + secret + "@a:2379",            // wrong URL scheme
		"etcd:root:" + secret + "@a:x",                     // bad port, no URL
		"etcd:root:" + secret + "%zz@a:2379",               // bad escape, no URL
		"etcd:http://root:" + secret + "@a:2379,http://other:" + secret + "x@b:2379",
		"static:root:" + secret + "@a:80",
		"static:a:1,root:" + secret + "@a:80",
		"dns:root:" + secret + "@a",
	}
	for _, spec := range specs {
		d, err := Parse(spec, Options{})
		var shown string
		if err != nil {
			shown = err.Error()
		} else {
			shown = d.String()
			_ = d.(io.Closer).Close()
		}
		if strings.Contains(shown, secret) {
			t.Errorf("%s\n  shows the password: %s", strings.ReplaceAll(spec, secret, "<secret>"), shown)
		}
	}
}
