package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

type testOptions struct {
	Addrs    []string      `opt:"addrs" default:"a:1,b:2" alias:"hosts" help:"servers"`
	Mode     string        `opt:"mode" default:"pool" enum:"pool,pipeline" help:"client mode"`
	Pool     int           `opt:"poolSize" default:"8" min:"1" max:"64" help:"connections"`
	Ratio    float64       `opt:"ratio" default:"0.5" min:"0" max:"1" live:"true" help:"a fraction"`
	TTL      time.Duration `opt:"ttl" default:"0s" min:"0s" live:"true" help:"expiry"`
	TLS      bool          `opt:"tls" default:"false" help:"use TLS"`
	Password string        `opt:"password" secret:"true" help:"secret"`
	Count    uint          `opt:"count" default:"3" help:"a count"`
	//lint:ignore U1000 present to prove that unexported fields are not options
	ignored int
}

func defaults(t *testing.T) *testOptions {
	t.Helper()
	o := &testOptions{}
	if err := ApplyDefaults(o); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestSchemaAndDefaults(t *testing.T) {
	schema, err := Schema(&testOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"addrs": "list", "mode": "string", "poolSize": "int", "ratio": "float",
		"ttl": "duration", "tls": "bool", "password": "string", "count": "uint"}
	if len(schema) != len(want) {
		t.Fatalf("schema has %d options, want %d", len(schema), len(want))
	}
	for _, o := range schema {
		if want[o.Name] != o.Type {
			t.Errorf("%s: type %q, want %q", o.Name, o.Type, want[o.Name])
		}
	}
	o := defaults(t)
	if len(o.Addrs) != 2 || o.Mode != "pool" || o.Pool != 8 || o.Ratio != 0.5 || o.Count != 3 {
		t.Fatalf("defaults not applied: %+v", o)
	}
	if _, err := Schema(42); err == nil {
		t.Fatal("Schema of an int succeeded")
	}
}

func TestSchemaRejectsDuplicateNames(t *testing.T) {
	type dup struct {
		A string `opt:"host"`
		B string `opt:"hosts" alias:"HOST"`
	}
	if _, err := Schema(&dup{}); err == nil || !strings.Contains(err.Error(), "host") {
		t.Fatalf("duplicate name/alias accepted: %v", err)
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]string
		check   func(*testOptions) bool
		errKeys []string // fields named in the error; empty: success
	}{
		{"list and alias", map[string]string{"hosts": " x:1 , y:2 ,"}, func(o *testOptions) bool { return len(o.Addrs) == 2 && o.Addrs[1] == "y:2" }, nil},
		{"enum", map[string]string{"mode": "pipeline"}, func(o *testOptions) bool { return o.Mode == "pipeline" }, nil},
		{"bounds and types", map[string]string{"poolSize": "64", "ratio": "1", "ttl": "90s", "tls": "true", "count": "0"},
			func(o *testOptions) bool {
				return o.Pool == 64 && o.Ratio == 1 && o.TTL == 90*time.Second && o.TLS && o.Count == 0
			}, nil},
		{"bad enum", map[string]string{"mode": "turbo"}, nil, []string{"mode"}},
		{"out of range", map[string]string{"poolSize": "65", "ratio": "-0.1"}, nil, []string{"poolSize", "ratio"}},
		{"not a number", map[string]string{"poolSize": "many", "ttl": "soon", "tls": "yes please", "count": "-1"}, nil, []string{"count", "poolSize", "tls", "ttl"}},
		{"NaN and infinity", map[string]string{"ratio": "NaN"}, nil, []string{"ratio"}},
		{"infinity", map[string]string{"ratio": "+Inf"}, nil, []string{"ratio"}},
		{"unknown", map[string]string{"nope": "1"}, nil, []string{"nope"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults(t)
			before := *o
			err := Set(o, tc.values)
			if len(tc.errKeys) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if !tc.check(o) {
					t.Fatalf("values not applied: %+v", o)
				}
				return
			}
			fes, ok := AsFieldErrors(err)
			if !ok || len(fes) != len(tc.errKeys) {
				t.Fatalf("error %v, want field errors for %v", err, tc.errKeys)
			}
			for i, fe := range fes {
				if fe.Field != tc.errKeys[i] || fe.Allowed == "" {
					t.Errorf("error %d = %+v, want field %s with allowed values", i, fe, tc.errKeys[i])
				}
			}
			if fmt.Sprint(*o) != fmt.Sprint(before) {
				t.Fatal("a failed Set changed the options (must be all or nothing)")
			}
		})
	}
}

func TestSecretsNeverEchoed(t *testing.T) {
	o := defaults(t)
	err := Set(o, map[string]string{"Password": "hunter2", "password": "hunter3", "poolSize": "hunter4"})
	if err == nil {
		t.Fatal("bad values accepted")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("value of an unknown (misspelt secret) option echoed: %v", err)
	}
	if err := Set(o, map[string]string{"password": "s3cret"}); err != nil {
		t.Fatal(err)
	}
	if v := Values(o, true)["password"]; v != Redacted {
		t.Fatalf("redacted value = %q", v)
	}
	if v := Values(o, false)["password"]; v != "s3cret" {
		t.Fatalf("unredacted value = %q", v)
	}
}

func TestChangedSplitsLiveOptions(t *testing.T) {
	a, b := defaults(t), defaults(t)
	_ = Set(b, map[string]string{"ratio": "0.9", "ttl": "1s", "poolSize": "2"})
	live, restart := Changed(a, b)
	if strings.Join(live, ",") != "ratio,ttl" || strings.Join(restart, ",") != "poolSize" {
		t.Fatalf("live %v restart %v", live, restart)
	}
}

func TestCanonical(t *testing.T) {
	schema, _ := Schema(&testOptions{})
	for in, want := range map[string]string{"HOSTS": "addrs", "poolsize": "poolSize", "addrs": "addrs"} {
		if got, ok := Canonical(schema, in); !ok || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := Canonical(schema, "nope"); ok {
		t.Error("unknown name resolved")
	}
}

type fakeDriver struct {
	initErr error
	closed  *bool
}

func (f *fakeDriver) Init(context.Context, any) error              { return f.initErr }
func (f *fakeDriver) Read(context.Context, string) ([]byte, error) { return nil, ErrNotFound }
func (f *fakeDriver) Write(context.Context, string, []byte) error  { return nil }
func (f *fakeDriver) Close() error                                 { *f.closed = true; return nil }
func newFake(initErr error, closed *bool) func() Driver {
	return func() Driver { return &fakeDriver{initErr, closed} }
}
func newOpts() any { return &testOptions{} }

func TestRegistry(t *testing.T) {
	forgetRegistered(t, "test-ok", "test-failing")
	var closed bool
	tests := []struct {
		def  Definition
		fail bool
	}{
		{Definition{Name: "test-ok", NewOptions: newOpts, New: newFake(nil, &closed)}, false},
		{Definition{Name: "test-ok", NewOptions: newOpts, New: newFake(nil, &closed)}, true}, // duplicate
		{Definition{Name: "", NewOptions: newOpts, New: newFake(nil, &closed)}, true},
		{Definition{Name: "has space", NewOptions: newOpts, New: newFake(nil, &closed)}, true},
		{Definition{Name: "no-ctor", NewOptions: newOpts}, true},
		{Definition{Name: "test-failing", NewOptions: newOpts, New: newFake(errors.New("refused"), &closed)}, false},
	}
	for _, tc := range tests {
		if err := Register(tc.def); (err != nil) != tc.fail {
			t.Errorf("Register(%q) error = %v, want failure %v", tc.def.Name, err, tc.fail)
		}
	}
	if _, ok := Lookup("test-ok"); !ok {
		t.Fatal("registered driver not found")
	}
	d, opts, err := Open(context.Background(), "test-ok", map[string]string{"mode": "pipeline"})
	if err != nil || d == nil {
		t.Fatal(err)
	}
	if o, err := OptionsAs[testOptions](opts); err != nil || o.Mode != "pipeline" {
		t.Fatalf("options %+v, %v", o, err)
	}
	if _, err := OptionsAs[fakeDriver](opts); err == nil {
		t.Fatal("OptionsAs accepted the wrong type")
	}
	if _, _, err := Open(context.Background(), "test-failing", nil); err == nil || !closed {
		t.Fatalf("failed Init: err %v, closed %v; want an error and Close called", err, closed)
	}
	if _, _, err := Open(context.Background(), "no-such-driver", nil); !errors.Is(err, ErrUnknownDriver) || !strings.Contains(err.Error(), "test-ok") {
		t.Fatalf("unknown driver: %v (should list the registered ones)", err)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want Class
	}{
		{context.DeadlineExceeded, ClassTimeout},
		{fmt.Errorf("get: %w", os.ErrDeadlineExceeded), ClassTimeout},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, ClassTimeout},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), ClassUnavailable},
		{syscall.ECONNRESET, ClassUnavailable},
		{io.EOF, ClassUnavailable},
		{&net.OpError{Op: "dial", Err: errors.New("no route")}, ClassUnavailable},
		{Wrap(ClassThrottled, errors.New("slow down")), ClassThrottled},
		{fmt.Errorf("op: %w", Wrap(ClassRejected, io.EOF)), ClassRejected}, // explicit class wins
		{errors.New("something else"), ClassOther},
	}
	for _, tc := range tests {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
	if Wrap(ClassTimeout, nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if got := Wrap(ClassThrottled, errors.New("x")).Error(); got != "throttled: x" {
		t.Errorf("message %q", got)
	}
	for i, c := range Classes {
		if int(c) != i || c.String() == "unknown" {
			t.Errorf("class %d: %v", i, c)
		}
	}
}

func TestFieldErrorMessage(t *testing.T) {
	fe := &FieldError{Field: "workload.readRate", Value: "-5", Allowed: "a number >= 0", Source: "--set"}
	want := `workload.readRate: invalid value "-5" (from --set); allowed: a number >= 0`
	if fe.Error() != want {
		t.Fatalf("got %q\nwant %q", fe.Error(), want)
	}
}
