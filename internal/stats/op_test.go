package stats

import "testing"

func TestOpNames(t *testing.T) {
	tests := []struct {
		op   Op
		name string
	}{
		{OpRead, "read"},
		{OpWrite, "write"},
		{OpBackfill, "backfill"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.name {
			t.Errorf("Op(%d).String() = %q, want %q", tt.op, got, tt.name)
		}
		got, ok := ParseOp(tt.name)
		if !ok || got != tt.op {
			t.Errorf("ParseOp(%q) = %v, %v; want %v, true", tt.name, got, ok, tt.op)
		}
	}
	if len(tests) != NumOps {
		t.Errorf("test covers %d ops, NumOps = %d", len(tests), NumOps)
	}
	if _, ok := ParseOp("scan"); ok {
		t.Error(`ParseOp("scan") succeeded`)
	}
	if got := Op(NumOps).String(); got != "unknown" {
		t.Errorf("out-of-range Op.String() = %q", got)
	}
}

func TestValidationNames(t *testing.T) {
	want := map[Validation]string{Corrupt: "corrupt", WrongKey: "wrongKey", Stale: "stale", Lost: "lost"}
	if len(want) != NumValidations {
		t.Fatalf("test covers %d kinds, NumValidations = %d", len(want), NumValidations)
	}
	for _, v := range Validations {
		if got := v.String(); got != want[v] {
			t.Errorf("Validation(%d).String() = %q, want %q", v, got, want[v])
		}
	}
}
