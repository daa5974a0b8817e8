package keydist

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// testOptions has one option of each kind the built-ins use, and a rule the tags cannot
// state.
type testOptions struct {
	Spread int64   `opt:"spread" default:"4" min:"1" max:"100" help:"keys per bucket"`
	Skew   float64 `opt:"skew" default:"0.5" min:"0" max:"1" help:"how uneven"`
}

func (o *testOptions) Validate() error {
	if o.Skew == 0 {
		return driver.FieldErrors{{Field: "skew", Value: "0", Allowed: "a number greater than 0"}}
	}
	return nil
}

var first = GeneratorFunc(func(*rand.Rand, Op) int64 { return 0 })

func newFirst(Keyspace, any) (Generator, error) { return first, nil }

func TestRegisterRefusesBadDefinitions(t *testing.T) {
	forgetRegistered(t, "kd_taken")
	if err := Register(Definition{Name: "kd_taken", Aliases: []string{"kd_alias"}, New: newFirst}); err != nil {
		t.Fatal(err)
	}
	type badDefaults struct {
		N int `opt:"n" default:"0" min:"1" max:"2" help:"n"`
	}
	tests := []struct {
		name string
		def  Definition
		want string
	}{
		{"empty name", Definition{New: newFirst}, "empty name"},
		{"upper case", Definition{Name: "Mine", New: newFirst}, "a lower-case letter"},
		{"leading digit", Definition{Name: "9lives", New: newFirst}, "a lower-case letter"},
		{"dot", Definition{Name: "a.b", New: newFirst}, "a lower-case letter"},
		{"bad alias", Definition{Name: "kd_ok", Aliases: []string{"x y"}, New: newFirst}, `name "x y"`},
		{"no constructor", Definition{Name: "kd_nonew"}, "New is required"},
		{"name taken", Definition{Name: "kd_taken", New: newFirst}, `name "kd_taken" is taken by "kd_taken"`},
		{"name is an alias", Definition{Name: "kd_alias", New: newFirst}, `taken by "kd_taken"`},
		{"alias taken", Definition{Name: "kd_new", Aliases: []string{"kd_taken"}, New: newFirst}, "is taken"},
		{"bad defaults", Definition{Name: "kd_defaults", NewOptions: func() any { return new(badDefaults) }, New: newFirst}, "options at their defaults"},
		{"rule fails at defaults", Definition{Name: "kd_rule", NewOptions: func() any { return &zeroSkew{} }, New: newFirst}, "skew"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Register(tt.def)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Register = %v, want an error containing %q", err, tt.want)
			}
			if _, ok := Lookup(tt.def.Name); ok && tt.def.Name != "kd_taken" && tt.def.Name != "kd_alias" {
				t.Errorf("the refused %q was registered anyway", tt.def.Name)
			}
		})
	}
	if slices.Contains(Names(), "kd_new") {
		t.Error("a definition refused for one alias kept its name")
	}
}

// zeroSkew has defaults its own rule refuses.
type zeroSkew struct {
	Skew float64 `opt:"skew" default:"0" min:"0" max:"1" help:"h"`
}

func (o *zeroSkew) Validate() error {
	return (&testOptions{Skew: o.Skew}).Validate()
}

func TestLookupNamesAndAliases(t *testing.T) {
	forgetRegistered(t, "kd_look")
	MustRegister(Definition{Name: "kd_look", Aliases: []string{"kd_look_alias"}, Summary: "s", New: newFirst})
	for _, n := range []string{"kd_look", "KD_LOOK", " kd_look_alias "} {
		if d, ok := Lookup(n); !ok || d.Name != "kd_look" {
			t.Errorf("Lookup(%q) = %q, %v; want kd_look", n, d.Name, ok)
		}
	}
	if _, ok := Lookup("kd_nothing"); ok {
		t.Error("Lookup found an unregistered name")
	}
	names := Names()
	i := slices.Index(names, "kd_look")
	if i < 0 || i+1 >= len(names) || names[i+1] != "kd_look_alias" {
		t.Errorf("Names() = %v: want kd_look followed by its alias", names)
	}
	all := All()
	if all[len(all)-1].Name != "kd_look" {
		t.Errorf("All() does not end with the last registered: %v", all[len(all)-1].Name)
	}
}

func TestOptionsAndBuild(t *testing.T) {
	var built *testOptions
	d := Definition{Name: "kd_build", NewOptions: func() any { return new(testOptions) },
		Check: func(ks Keyspace, o any) error {
			if s := o.(*testOptions).Spread; s > ks.NumKeys {
				return driver.FieldErrors{{Field: "spread", Value: "x", Allowed: "at most numKeys"}}
			}
			return nil
		},
		New: func(_ Keyspace, o any) (Generator, error) { built = o.(*testOptions); return first, nil }}
	tests := []struct {
		name   string
		ks     Keyspace
		values map[string]string
		fields []string // the fields of the errors; none means it builds
		want   testOptions
	}{
		{"defaults", Keyspace{NumKeys: 10}, nil, nil, testOptions{Spread: 4, Skew: 0.5}},
		{"values", Keyspace{NumKeys: 10}, map[string]string{"spread": "7", "skew": "1"}, nil, testOptions{Spread: 7, Skew: 1}},
		{"out of range", Keyspace{NumKeys: 10}, map[string]string{"spread": "0"}, []string{"spread"}, testOptions{}},
		{"not a number", Keyspace{NumKeys: 10}, map[string]string{"skew": "lots"}, []string{"skew"}, testOptions{}},
		{"unknown", Keyspace{NumKeys: 10}, map[string]string{"sprad": "3"}, []string{"sprad"}, testOptions{}},
		{"rule", Keyspace{NumKeys: 10}, map[string]string{"skew": "0"}, []string{"skew"}, testOptions{}},
		{"check against keyspace", Keyspace{NumKeys: 3}, nil, []string{"spread"}, testOptions{}},
		{"no keys, bad option: both", Keyspace{NumKeys: 0}, map[string]string{"spread": "0"}, []string{"numKeys", "spread"}, testOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			built = nil
			verr := d.Validate(tt.ks, tt.values)
			g, err := d.Build(tt.ks, tt.values)
			if (verr == nil) != (err == nil) {
				t.Fatalf("Validate = %v but Build = %v: they must agree", verr, err)
			}
			if len(tt.fields) == 0 {
				if err != nil || g == nil || built == nil || *built != tt.want {
					t.Fatalf("Build = %v, %v with options %+v; want options %+v", g, err, built, tt.want)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok {
				t.Fatalf("Build error %v is not field errors", err)
			}
			var got []string
			for _, fe := range fes {
				got = append(got, fe.Field)
				if fe.Allowed == "" {
					t.Errorf("%s: the error does not say what is allowed: %v", fe.Field, fe)
				}
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("error fields %v, want %v (%v)", got, tt.fields, err)
			}
			if built != nil {
				t.Error("New was called with invalid input")
			}
		})
	}
}

func TestNoOptionsRefusesValues(t *testing.T) {
	d := Definition{Name: "kd_plain", New: newFirst}
	if _, err := d.Build(Keyspace{NumKeys: 1}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := d.Build(Keyspace{NumKeys: 1}, map[string]string{"x": "1"})
	if fes, ok := driver.AsFieldErrors(err); !ok || fes[0].Field != "x" || !strings.Contains(fes[0].Allowed, "no options") {
		t.Errorf("Build with an option of a pattern without any = %v", err)
	}
	if s, err := d.Schema(); err != nil || len(s) != 0 {
		t.Errorf("Schema = %v, %v; want none", s, err)
	}
}

func TestBuildReportsConstructorFailures(t *testing.T) {
	boom := errors.New("boom")
	d := Definition{Name: "kd_fail", New: func(Keyspace, any) (Generator, error) { return nil, boom }}
	if _, err := d.Build(Keyspace{NumKeys: 1}, nil); !errors.Is(err, boom) || !strings.Contains(err.Error(), "kd_fail") {
		t.Errorf("Build = %v, want the constructor's error naming the distribution", err)
	}
	d.New = func(Keyspace, any) (Generator, error) { return nil, nil }
	if _, err := d.Build(Keyspace{NumKeys: 1}, nil); err == nil {
		t.Error("Build accepted a nil generator")
	}
}
