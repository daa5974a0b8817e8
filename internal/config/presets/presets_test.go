package presets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
)

// load builds a configuration from the named preset with the memory driver, as
// --workload NAME --driver memory does.
func load(t *testing.T, name string) (*config.Snapshot, error) {
	t.Helper()
	l, fes, err := Load(name)
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return config.Load(config.Sources{Preset: &l, PresetErrors: fes, Sets: []string{"driver.name=memory"}})
}

func TestBuiltinPresetsLoadAndValidate(t *testing.T) {
	tests := []struct {
		name      string
		readShare float64 // reads / (reads + writes) of the open-loop rates
		total     float64
		pattern   string
		readMix   string
		wantErr   string // a preset the selected driver (memory) cannot serve
	}{
		{name: "ndbench-default", readShare: 0.5, total: 200, pattern: "uniform", readMix: "read"},
		{name: "ycsb-a", readShare: 0.5, total: 1000, pattern: "ycsb_zipfian", readMix: "read"},
		{name: "ycsb-b", readShare: 0.95, total: 1000, pattern: "ycsb_zipfian", readMix: "read"},
		{name: "ycsb-c", readShare: 1, total: 1000, pattern: "ycsb_zipfian", readMix: "read"},
		{name: "ycsb-d", readShare: 0.95, total: 1000, pattern: "latest", readMix: "read"},
		{name: "ycsb-e", readShare: 0.95, total: 1000, pattern: "ycsb_zipfian", readMix: "scan"},
		{name: "ycsb-f", readShare: 0.5, total: 1000, pattern: "ycsb_zipfian", readMix: "read"},
	}
	if got, want := len(All()), len(tests); got != want {
		t.Fatalf("%d built-in presets, the test knows %d: add the new one here", got, want)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := load(t, tc.name)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := snap.Config.Workload
			reads, writes := w.ReadRate, w.WriteRate
			if !w.WriteEnabled {
				writes = 0
			}
			if got := reads + writes; got != tc.total {
				t.Errorf("total rate %v, want %v", got, tc.total)
			}
			if got := reads / (reads + writes); got != tc.readShare {
				t.Errorf("read share %v, want %v", got, tc.readShare)
			}
			if w.Pattern != tc.pattern || w.ReadMix != tc.readMix {
				t.Errorf("pattern %q readMix %q, want %q %q", w.Pattern, w.ReadMix, tc.pattern, tc.readMix)
			}
			if strings.HasPrefix(tc.name, "ycsb-") && (w.DataSize != 1000 || w.NumKeys != 1000 || w.ZipfExponent != 0.99 || !w.Backfill) {
				t.Errorf("YCSB preset: dataSize %d numKeys %d zipfExponent %v backfill %v, want 1000 1000 0.99 true",
					w.DataSize, w.NumKeys, w.ZipfExponent, w.Backfill)
			}
			if _, src, _ := snap.Value("workload.readRate"); src != "preset "+tc.name {
				t.Errorf("workload.readRate from %q, want preset %s", src, tc.name)
			}
		})
	}
}

func TestBuiltinPresetsAreDocumented(t *testing.T) {
	for _, p := range All() {
		if p.Description == "" || strings.Contains(p.Description, "\n") {
			t.Errorf("%s: description %q: want one line starting the file with %q", p.Name, p.Description, descriptionPrefix)
		}
		if !strings.Contains(string(p.Text), "# Source:") {
			t.Errorf("%s: no '# Source:' comment citing where its numbers come from", p.Name)
		}
	}
	if p, ok := Lookup("ndbench-default"); !ok || !strings.Contains(string(p.Text), "differs from ndbench's built-in defaults") {
		t.Errorf("ndbench-default must say what differs from the built-in defaults")
	}
}

// TestPrecedence: preset < file < env < --set, each value labelled with its source.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("workload:\n  writeRate: 11\n  numKeys: 22\n  readers: 33\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pl, _, err := Load("ycsb-b")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.Load(file, config.Sources{Preset: &pl,
		Env:  []string{"NDBENCH_WORKLOAD_NUMKEYS=44", "NDBENCH_WORKLOAD_READERS=55"},
		Sets: []string{"driver.name=memory", "workload.readers=66"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ key, value, source string }{
		{"workload.readRate", "950", "preset ycsb-b"},              // preset only
		{"workload.writeRate", "11", "file " + file},               // preset < file
		{"workload.numKeys", "44", "env NDBENCH_WORKLOAD_NUMKEYS"}, // preset < file < env
		{"workload.readers", "66", "--set"},                        // preset < file < env < --set
		{"workload.opTimeout", "5s", "default"},                    // not in the preset
	}
	for _, tc := range tests {
		v, src, _ := snap.Value(tc.key)
		if v != tc.value || src != tc.source {
			t.Errorf("%s = %q from %q, want %q from %q", tc.key, v, src, tc.value, tc.source)
		}
	}
}

func TestUserPresetFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		file, text string
		key, want  string
		wantErr    string // a field error of the file's reader
	}{
		{file: "mine.yaml", text: "workload:\n  readRate: 1234\n  pattern: hotspot\n", key: "workload.readRate", want: "1234"},
		{file: "mine.properties", text: "ndbench.config.readRateLimit=4321\n", key: "workload.readRate", want: "4321"},
		{file: "bad.properties", text: "cassandra.host=h\n", wantErr: "only ndbench.config.<property> keys"},
		{file: "typo.yaml", text: "workload:\n  readRat: 5\n", wantErr: "did you mean readRate?"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			snap, err := load(t, path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "preset file "+path) {
					t.Fatalf("error %v, want one containing %q and the preset file's name", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// A properties file's source also names the property: "... as ndbench.config.readRateLimit".
			if v, src, _ := snap.Value(tc.key); v != tc.want || !strings.HasPrefix(src, "preset file "+path) {
				t.Errorf("%s = %q from %q, want %q from preset file %s", tc.key, v, src, tc.want, path)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(malformed, []byte("workload: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg     string
		unknown bool     // errors.Is(err, ErrUnknown)
		want    []string // in the message
	}{
		{arg: "ycsb-z", unknown: true, want: []string{`"ycsb-z" is not a built-in preset`, "ndbench-default, ycsb-a", "ycsb-f"}},
		{arg: "YCSB-A", unknown: true, want: []string{"is not a built-in preset"}}, // names are exact
		{arg: filepath.Join(dir, "none.yaml"), unknown: true, want: []string{"does not exist", "a path must name an existing", "ycsb-a"}},
		{arg: "none.properties", unknown: true, want: []string{"preset file none.properties does not exist"}},
		{arg: malformed, want: []string{"read preset file " + malformed}},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			_, _, err := Load(tc.arg)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrUnknown) != tc.unknown {
				t.Errorf("errors.Is(ErrUnknown) = %v, want %v: %v", !tc.unknown, tc.unknown, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestEveryPresetDocumented keeps the Presets table of docs/configuration.md true.
func TestEveryPresetDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		if !strings.Contains(string(b), "| `"+name+"` |") {
			t.Errorf("docs/configuration.md's Presets table lacks `%s`", name)
		}
	}
}
