package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ndbench/ndbench/driver"
)

func TestNDBenchNamesMapToOptions(t *testing.T) {
	// The names NDBench's ndbench.config.cass.* properties use.
	values := map[string]string{
		"host":                  "10.0.0.1,10.0.0.2",
		"hostPort":              "19042",
		"cluster":               "prod",
		"keyspace":              "dev1",
		"cfname":                "emp",
		"connections":           "4",
		"username":              "bench",
		"password":              "pw",
		"readConsistencyLevel":  "LOCAL_QUORUM",
		"writeConsistencyLevel": "EACH_QUORUM",
		"colsPerRow":            "5",
		"rowsPerPartition":      "2",
		"useBatchWrites":        "true",
		"createSchema":          "false",
	}
	opts, err := driver.NewOptions("cassandra", values)
	if err != nil {
		t.Fatal(err)
	}
	o := opts.(*Options)
	want := Options{Hosts: []string{"10.0.0.1", "10.0.0.2"}, Port: 19042, Cluster: "prod", Keyspace: "dev1", Table: "emp",
		NumConns: 4, Auth: driver.AuthOptions{Username: "bench", Password: "pw"}, ReadConsistencyLevel: "LOCAL_QUORUM",
		WriteConsistencyLevel: "EACH_QUORUM", ColsPerRow: 5, RowsPerPartition: 2, UseBatchWrites: true}
	got := fmt.Sprint(o.Hosts, o.Port, o.Cluster, o.Keyspace, o.Table, o.NumConns, o.Auth.Username, o.Auth.Password,
		o.ReadConsistencyLevel, o.WriteConsistencyLevel, o.ColsPerRow, o.RowsPerPartition, o.UseBatchWrites, o.CreateSchema)
	exp := fmt.Sprint(want.Hosts, want.Port, want.Cluster, want.Keyspace, want.Table, want.NumConns, want.Auth.Username, want.Auth.Password,
		want.ReadConsistencyLevel, want.WriteConsistencyLevel, want.ColsPerRow, want.RowsPerPartition, want.UseBatchWrites, false)
	if got != exp {
		t.Errorf("options from NDBench names:\n got %s\nwant %s", got, exp)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// NDBench's dotted property name for the port is accepted as well.
	opts, err = driver.NewOptions("cassandra", map[string]string{"host.port": "9142"})
	if err != nil || opts.(*Options).Port != 9142 {
		t.Errorf("host.port: %v", err)
	}
}

func TestSchemaFlags(t *testing.T) {
	schema, err := driver.Schema(&Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range schema {
		switch o.Name {
		case "password":
			if !o.Secret {
				t.Error("password must be secret")
			}
		case "readConsistencyLevel", "writeConsistencyLevel":
			if !o.Live {
				t.Errorf("%s must be live", o.Name)
			}
		default:
			if o.Live || o.Secret {
				t.Errorf("%s: unexpected live=%v secret=%v", o.Name, o.Live, o.Secret)
			}
		}
	}
}

func TestOptionValidation(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]string
		bad    string // option expected in the field errors; empty means valid
	}{
		{"defaults", nil, ""},
		{"keyspace with dash", map[string]string{"keyspace": "perf-test"}, "keyspace"},
		{"table starting with digit", map[string]string{"table": "1t"}, "table"},
		{"table too long", map[string]string{"table": strings.Repeat("t", 49)}, "table"},
		{"table injection", map[string]string{"cfname": "t; DROP KEYSPACE x"}, "table"},
		{"no hosts", map[string]string{"hosts": ""}, "hosts"},
		{"read at ANY", map[string]string{"readConsistencyLevel": "ANY"}, "readConsistencyLevel"},
		{"write at SERIAL", map[string]string{"writeConsistencyLevel": "SERIAL"}, "writeConsistencyLevel"},
		{"lower-case level", map[string]string{"readConsistencyLevel": "quorum"}, "readConsistencyLevel"},
		{"zero cols", map[string]string{"colsPerRow": "0"}, "colsPerRow"},
		{"zero rows", map[string]string{"rowsPerPartition": "0"}, "rowsPerPartition"},
		{"bad replication class", map[string]string{"replicationClass": "LocalStrategy"}, "replicationClass"},
		{"missing CA file", map[string]string{"tls": "true", "tlsCAFile": "/nonexistent/ca.pem"}, "tlsCAFile"},
		{"cert without key", map[string]string{"tlsCertFile": "/etc/hostname"}, "tlsKeyFile"},
		{"password without user", map[string]string{"password": "x"}, "username"},
		{"NTS with local DC", map[string]string{"replicationClass": "NetworkTopologyStrategy", "localDC": "dc1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := driver.NewOptions("cassandra", tt.values)
			if err == nil {
				_, err = opts.(*Options).checkFiles()
			}
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok {
				t.Fatalf("want a field error for %s, got %v", tt.bad, err)
			}
			found := false
			for _, fe := range fes {
				found = found || fe.Field == tt.bad
				if strings.Contains(fe.Value, "x") && fe.Field == "password" {
					t.Errorf("password value echoed: %v", fe)
				}
			}
			if !found {
				t.Errorf("no field error for %s in %v", tt.bad, fes)
			}
		})
	}
}

func TestSplitJoin(t *testing.T) {
	tests := []struct {
		value []byte
		n     int
	}{
		{[]byte("hello world"), 1},
		{[]byte("hello world"), 3},
		{[]byte("ab"), 5},
		{[]byte{}, 4},
		{nil, 2},
		{bytes.Repeat([]byte{0, 1, 0xff}, 1000), 7},
	}
	for _, tt := range tests {
		pieces := split(tt.value, tt.n)
		if len(pieces) != tt.n {
			t.Fatalf("split into %d: got %d pieces", tt.n, len(pieces))
		}
		parts := make([][]byte, tt.n)
		minLen, maxLen := len(tt.value), 0
		for i, p := range pieces {
			parts[i] = p.([]byte)
			if parts[i] == nil {
				t.Errorf("piece %d is nil: it would be stored as null", i)
			}
			minLen, maxLen = min(minLen, len(parts[i])), max(maxLen, len(parts[i]))
		}
		if maxLen-minLen > 1 {
			t.Errorf("uneven split of %d bytes into %d: sizes %d..%d", len(tt.value), tt.n, minLen, maxLen)
		}
		if got := join(parts); !bytes.Equal(got, tt.value) || got == nil {
			t.Errorf("join(split(%q, %d)) = %q", tt.value, tt.n, got)
		}
	}
}

func TestClassifySentinels(t *testing.T) {
	tests := []struct {
		err  error
		want driver.Class
	}{
		{gocql.ErrNoConnections, driver.ClassUnavailable},
		{fmt.Errorf("write: %w", gocql.ErrConnectionClosed), driver.ClassUnavailable},
		{gocql.ErrSessionClosed, driver.ClassUnavailable},
		{gocql.ErrTimeoutNoResponse, driver.ClassTimeout},
		{context.DeadlineExceeded, driver.ClassTimeout},
		{gocql.ErrNoStreams, driver.ClassThrottled},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), driver.ClassUnavailable},
		{errors.New("odd"), driver.ClassOther},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestInitFailsFastOnBadOptions(t *testing.T) {
	// NewOptions rejects the keyspace itself; Init must as well, for options built in code.
	if _, err := driver.NewOptions("cassandra", map[string]string{"keyspace": "bad-name"}); err == nil {
		t.Fatal("NewOptions accepted a bad keyspace")
	}
	opts, err := driver.NewOptions("cassandra", nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.(*Options).Keyspace = "bad-name"
	d := &Driver{}
	if _, ok := driver.AsFieldErrors(d.Init(context.Background(), opts)); !ok {
		t.Fatal("Init with a bad keyspace must return field errors before connecting")
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close after a failed Init: %v", err)
	}
}

func TestScrubRemovesPassword(t *testing.T) {
	d := &Driver{password: "hunter2"}
	err := d.fail("connect", errors.New("auth failed for hunter2"))
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("password in error: %v", err)
	}
}
