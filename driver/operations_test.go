package driver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type opDriver struct{ nopDriver }

func (opDriver) Do(context.Context, int, string, []byte) ([]byte, error) { return nil, nil }

type nopDriver struct{}

func (nopDriver) Init(context.Context, any) error              { return nil }
func (nopDriver) Read(context.Context, string) ([]byte, error) { return nil, ErrNotFound }
func (nopDriver) Write(context.Context, string, []byte) error  { return nil }
func (nopDriver) Close() error                                 { return nil }

type noOptions struct{}

func TestRegisterChecksOperations(t *testing.T) {
	forgetRegistered(t, "ops-ok")
	def := func(name string, ops []Operation, withDo bool) Definition {
		return Definition{Name: name, Summary: "test", NewOptions: func() any { return &noOptions{} },
			New: func() Driver {
				if withDo {
					return opDriver{}
				}
				return nopDriver{}
			}, Operations: ops}
	}
	for _, tt := range []struct {
		name string
		def  Definition
		want string // "" = accepted
	}{
		{"declared and implemented", def("ops-ok", []Operation{{Name: "scan", Kind: KindRead}, {Name: "del", Kind: KindOther}}, true), ""},
		{"no Operator", def("ops-nodo", []Operation{{Name: "scan"}}, false), "does not implement driver.Operator"},
		{"read taken", def("ops-read", []Operation{{Name: "read"}}, true), "declared twice"},
		{"duplicate", def("ops-dup", []Operation{{Name: "a"}, {Name: "a"}}, true), "declared twice"},
		{"bad name", def("ops-bad", []Operation{{Name: "a.b"}}, true), "a letter, then letters and digits"},
		{"bad kind", def("ops-kind", []Operation{{Name: "a", Kind: 9}}, true), "unknown kind"},
		{"kind rmw", def("ops-rmw", []Operation{{Name: "a", Kind: KindRMW}}, true), "kind rmw is the built-in rmw operation's"},
		{"kind insert", def("ops-insert", []Operation{{Name: "a", Kind: KindInsert}}, true), "kind insert is the built-in insert operation's"},
	} {
		err := Register(tt.def)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Register = %v, want %q", tt.name, err, tt.want)
		}
	}
	d, _ := Lookup("ops-ok")
	if got := strings.Join(d.OperationNames(), ","); got != "read,write,scan,del,rmw,insert" {
		t.Errorf("OperationNames = %s", got)
	}
	if o, i, ok := d.Operation("del"); !ok || i != 1 || o.Kind != KindOther {
		t.Errorf("Operation(del) = %+v, %d, %v", o, i, ok)
	}
	if _, i, ok := d.Operation("write"); !ok || i != -2 {
		t.Errorf("Operation(write) index %d, %v", i, ok)
	}
	b, err := json.Marshal(d.AllOperations())
	if err != nil {
		t.Fatal(err)
	}
	var back []Operation
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 6 || back[3].Kind != KindOther || !strings.Contains(string(b), `"kind":"other"`) {
		t.Errorf("JSON round trip: %s -> %+v, %v", b, back, err)
	}
}

type deleterDriver struct{ opDriver }

func (deleterDriver) Delete(context.Context, string) error { return nil }

type scannerDriver struct{ deleterDriver }

func (scannerDriver) Scan(context.Context, string, int) (int, error) { return 0, nil }

// TestBuiltinOperations: every driver offers rmw, a driver that implements Deleter offers
// delete, one that implements Scanner scan, and an operation the driver declares under either name is the driver's.
func TestBuiltinOperations(t *testing.T) {
	def := func(d Driver, ops ...Operation) Definition {
		return Definition{Name: "x", New: func() Driver { return d }, Operations: ops}
	}
	tests := []struct {
		name  string
		def   Definition
		names string
		op    string
		kind  Kind
		index int
	}{
		{"plain driver: rmw", def(nopDriver{}), "read,write,rmw,insert", OpRMW, KindRMW, IndexRMW},
		{"plain driver: insert", def(nopDriver{}), "read,write,rmw,insert", OpInsert, KindInsert, IndexInsert},
		{"a Deleter: delete", def(deleterDriver{}), "read,write,delete,rmw,insert", OpDelete, KindDelete, IndexDelete},
		{"a Scanner: scan", def(scannerDriver{}), "read,write,delete,scan,rmw,insert", OpScan, KindScan, IndexScan},
		{"declared delete is the driver's", def(deleterDriver{}, Operation{Name: "delete", Kind: KindOther}),
			"read,write,delete,rmw,insert", OpDelete, KindOther, 0},
		{"declared rmw is the driver's", def(opDriver{}, Operation{Name: "rmw", Kind: KindWrite}), "read,write,rmw,insert", OpRMW, KindWrite, 0},
		{"declared insert is the driver's", def(opDriver{}, Operation{Name: "insert", Kind: KindWrite}), "read,write,insert,rmw", OpInsert, KindWrite, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(tc.def.OperationNames(), ","); got != tc.names {
				t.Errorf("OperationNames = %s, want %s", got, tc.names)
			}
			o, i, ok := tc.def.Operation(tc.op)
			if !ok || o.Kind != tc.kind || i != tc.index {
				t.Errorf("Operation(%s) = %+v, %d, %v; want kind %v index %d", tc.op, o, i, ok, tc.kind, tc.index)
			}
		})
	}
	if _, _, ok := def(nopDriver{}).Operation(OpDelete); ok {
		t.Error("a driver without Deleter offers delete")
	}
	if _, _, ok := def(deleterDriver{}).Operation(OpScan); ok {
		t.Error("a driver without Scanner offers scan")
	}
}

type orderedScanner struct{ scannerDriver }

func (orderedScanner) ScanOrder() ScanOrder { return ScanStore }

// TestScanOrderOf: a Scanner scans in byte order unless it states another order.
func TestScanOrderOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Scanner
		want ScanOrder
	}{
		{"silent scanner: bytes", scannerDriver{}, ScanBytes},
		{"stated order", orderedScanner{}, ScanStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScanOrderOf(tc.s); got != tc.want {
				t.Errorf("ScanOrderOf = %v, want %v", got, tc.want)
			}
		})
	}
}
