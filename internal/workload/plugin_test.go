package workload

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/keydist"
)

// pluginOptions has an option of its own and reuses a workload option.
type pluginOptions struct {
	Spread  int64   `opt:"spread" default:"2" min:"1" max:"100" help:"h"`
	HotKeys float64 `opt:"hotKeys" default:"0.2" min:"0" max:"1" help:"h"`
}

// pluginGot records the options the plugin's last generator was built with.
var pluginGot pluginOptions

func init() {
	keydist.MustRegister(keydist.Definition{Name: "test_plugin", Summary: "a plugin for the tests",
		NewOptions: func() any { return new(pluginOptions) },
		New: func(_ keydist.Keyspace, o any) (keydist.Generator, error) {
			pluginGot = *o.(*pluginOptions)
			return keydist.GeneratorFunc(func(*rand.Rand, keydist.Op) int64 { return 0 }), nil
		}})
}

// TestPluginPatternOptions: a registered pattern is built through NewKeys like a built-in,
// its own options come from workload.patternOptions, a workload option it declares from
// the workload's own key, and every mistake names the key the user has to change.
func TestPluginPatternOptions(t *testing.T) {
	tests := []struct {
		name    string
		p       KeyParams
		want    pluginOptions
		errs    []string // "field value" of each error; none: it builds
		allowed string   // in the first error's allowed text
	}{
		{"defaults and the workload's hotKeys", KeyParams{Pattern: "test_plugin", NumKeys: 10, HotKeys: 0.5}, pluginOptions{Spread: 2, HotKeys: 0.5}, nil, ""},
		{"own option", KeyParams{Pattern: "TEST_PLUGIN", NumKeys: 10, HotKeys: 0.5, Options: " spread = 7 "}, pluginOptions{Spread: 7, HotKeys: 0.5}, nil, ""},
		{"own option out of range", KeyParams{Pattern: "test_plugin", NumKeys: 10, HotKeys: 0.5, Options: "spread=0"}, pluginOptions{},
			[]string{"workload.patternOptions spread=0"}, "spread: an integer from 1 to 100"},
		{"unknown option", KeyParams{Pattern: "test_plugin", NumKeys: 10, HotKeys: 0.5, Options: "sprad=3"}, pluginOptions{},
			[]string{"workload.patternOptions sprad=3"}, "naming options of pattern test_plugin: spread"},
		{"workload option in patternOptions", KeyParams{Pattern: "test_plugin", NumKeys: 10, HotKeys: 0.5, Options: "hotKeys=0.3"}, pluginOptions{},
			[]string{"workload.patternOptions hotKeys=0.3"}, "set with workload.hotKeys"},
		{"not name=value", KeyParams{Pattern: "test_plugin", NumKeys: 10, HotKeys: 0.5, Options: "spread"}, pluginOptions{},
			[]string{"workload.patternOptions spread"}, "options of pattern test_plugin: spread"},
		{"twice", KeyParams{Pattern: "test_plugin", NumKeys: 10, HotKeys: 0.5, Options: "spread=3,spread=4"}, pluginOptions{},
			[]string{"workload.patternOptions spread=4"}, "each once"},
		{"workload option out of range", KeyParams{Pattern: "test_plugin", NumKeys: 10, HotKeys: 2}, pluginOptions{},
			[]string{"workload.hotKeys 2"}, "from 0 to 1"},
		{"built-in pattern has no own options", KeyParams{Pattern: "uniform", NumKeys: 10, Options: "spread=3"}, pluginOptions{},
			[]string{"workload.patternOptions spread=3"}, "pattern uniform has no options of its own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pluginGot = pluginOptions{}
			verr := tt.p.Validate()
			_, err := NewKeys(tt.p)
			if (verr == nil) != (err == nil) {
				t.Fatalf("Validate = %v, NewKeys = %v: they must agree", verr, err)
			}
			if len(tt.errs) == 0 {
				if err != nil || pluginGot != tt.want {
					t.Fatalf("NewKeys = %v with options %+v, want %+v", err, pluginGot, tt.want)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok {
				t.Fatalf("error %v is not field errors", err)
			}
			var got []string
			for _, fe := range fes {
				got = append(got, fe.Field+" "+fe.Value)
			}
			if strings.Join(got, "; ") != strings.Join(tt.errs, "; ") {
				t.Errorf("errors %q, want %q", got, tt.errs)
			}
			if !strings.Contains(fes[0].Allowed, tt.allowed) {
				t.Errorf("allowed %q, want it to contain %q", fes[0].Allowed, tt.allowed)
			}
		})
	}
}

func TestOptionKey(t *testing.T) {
	for name, want := range map[string]string{
		"zipfExponent": "workload.zipfExponent", "hotKeys": "workload.hotKeys", "expFraction": "workload.expFraction",
		"windowDuration": "workload.windowDuration", "spread": "workload.patternOptions", "numKeys": "workload.patternOptions",
	} {
		if got := OptionKey(name); got != want {
			t.Errorf("OptionKey(%s) = %s, want %s", name, got, want)
		}
	}
}
