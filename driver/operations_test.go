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
	} {
		err := Register(tt.def)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Register = %v, want %q", tt.name, err, tt.want)
		}
	}
	d, _ := Lookup("ops-ok")
	if got := strings.Join(d.OperationNames(), ","); got != "read,write,scan,del" {
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
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 4 || back[3].Kind != KindOther || !strings.Contains(string(b), `"kind":"other"`) {
		t.Errorf("JSON round trip: %s -> %+v, %v", b, back, err)
	}
}
