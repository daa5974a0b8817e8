package driver

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSchemaRejectsBadBounds: a bound that does not parse for its option's type, a lower
// bound above the upper one, or a bound on an option that has no order would silently
// not be enforced, so the schema (and with it Register) refuses them.
func TestSchemaRejectsBadBounds(t *testing.T) {
	type durationWithoutUnit struct {
		D time.Duration `opt:"d" default:"1s" min:"1ms" max:"8760" help:"x"`
	}
	type minAboveMax struct {
		N int `opt:"n" default:"5" min:"10" max:"1" help:"x"`
	}
	type boundOnString struct {
		S string `opt:"s" default:"a" max:"3" help:"x"`
	}
	type fractionalIntBound struct {
		N int `opt:"n" default:"1" min:"0.5" help:"x"`
	}
	for name, opts := range map[string]any{
		"duration without unit": &durationWithoutUnit{}, "min above max": &minAboveMax{},
		"bound on a string": &boundOnString{}, "fractional bound of an int": &fractionalIntBound{},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Schema(opts); err == nil {
				t.Fatal("schema accepted")
			}
			if err := Register(Definition{Name: "bad-bounds", New: func() Driver { return nil }, NewOptions: func() any { return opts }}); err == nil {
				t.Fatal("Register accepted")
			}
		})
	}
}

// TestOutOfRangeStatesBothBounds: every option with a lower and an upper bound names both
// in its error, whatever its type.
func TestOutOfRangeStatesBothBounds(t *testing.T) {
	type bounded struct {
		I int           `opt:"i" default:"1" min:"1" max:"10" help:"x"`
		U uint64        `opt:"u" default:"1" min:"1" max:"10" help:"x"`
		F float64       `opt:"f" default:"0.5" min:"0.01" max:"1" help:"x"`
		D time.Duration `opt:"d" default:"1s" min:"1ms" max:"8760h" help:"x"`
	}
	for _, tc := range []struct{ name, value, lo, hi string }{
		{"i", "11", "1", "10"}, {"i", "0", "1", "10"},
		{"u", "11", "1", "10"},
		{"f", "2", "0.01", "1"},
		{"d", "9000h", "1ms", "8760h"}, {"d", "0s", "1ms", "8760h"},
	} {
		o := &bounded{}
		if err := ApplyDefaults(o); err != nil {
			t.Fatal(err)
		}
		err := Set(o, map[string]string{tc.name: tc.value})
		if err == nil {
			t.Errorf("%s=%s accepted", tc.name, tc.value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.lo) || !strings.Contains(msg, tc.hi) {
			t.Errorf("%s=%s: %q does not state both bounds %s and %s", tc.name, tc.value, msg, tc.lo, tc.hi)
		}
	}
}

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		text string
	}{
		{"4096", 4096, "4KiB"}, {"1000", 1000, "1000B"}, {"0", 0, "0B"}, {"512MiB", 512 << 20, "512MiB"},
		{"1GiB", 1 << 30, "1GiB"}, {"1gib", 1 << 30, "1GiB"}, {" 2 GiB ", 2 << 30, "2GiB"}, {"1.5GiB", 3 << 29, "1536MiB"},
		{"1GB", 1e9, "1000000000B"}, {"3TiB", 3 << 40, "3TiB"}, {"10B", 10, "10B"}, {"1KB", 1000, "1000B"},
		{"9007199254740993", 9007199254740993, "9007199254740993B"},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want || got.String() != tc.text {
			t.Errorf("ParseSize(%q) = %d %q, %v; want %d %q", tc.in, got, got, err, tc.want, tc.text)
		}
		if back, err := ParseSize(got.String()); err != nil || back != got {
			t.Errorf("%q does not parse back: %d, %v", got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "GiB", "-1", "1XB", "1e30TiB", "NaN", "1 2MiB"} {
		if n, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, n)
		}
	}
}

// TestValidateRunsTheStructsRules: NewOptions applies an OptionsValidator's rules after
// the tags, and says which driver the options belong to once.
func TestValidateRunsTheStructsRules(t *testing.T) {
	forgetRegistered(t, "validated")
	if err := Register(Definition{Name: "validated", New: func() Driver { return nil },
		NewOptions: func() any { return &validatedOptions{} }}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewOptions("validated", map[string]string{"lo": "5", "hi": "9"}); err != nil {
		t.Fatal(err)
	}
	_, err := NewOptions("validated", map[string]string{"lo": "5", "hi": "2"})
	fes, ok := AsFieldErrors(err)
	if !ok || len(fes) != 1 || fes[0].Field != "hi" {
		t.Fatalf("lo=5 hi=2: %v", err)
	}
	if n := strings.Count(err.Error(), "options of driver validated"); n != 1 {
		t.Errorf("driver named %d times: %v", n, err)
	}
	// Validate also checks a struct filled in code against its tags.
	if err := Validate(&validatedOptions{Lo: -1, Hi: 3}); err == nil || !strings.Contains(err.Error(), "lo") {
		t.Errorf("Validate(lo=-1) = %v", err)
	}
	if err := CheckTags(&validatedOptions{Lo: 4, Hi: 3}); err != nil {
		t.Errorf("CheckTags checks tags only, got %v", err)
	}
}

type validatedOptions struct {
	Lo int `opt:"lo" default:"0" min:"0" max:"100" help:"low"`
	Hi int `opt:"hi" default:"10" min:"0" max:"100" help:"high"`
}

func (o *validatedOptions) Validate() error {
	if o.Hi < o.Lo {
		return FieldErrors{{Field: "hi", Value: strconv.Itoa(o.Hi), Allowed: "at least lo (" + strconv.Itoa(o.Lo) + ")"}}
	}
	return nil
}
