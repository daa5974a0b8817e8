package source

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
)

func TestPrecedence(t *testing.T) {
	yamlFile := "workload:\n  readRate: 200\n"
	propsFile := "ndbench.config.readRateLimit=300\n"
	tests := []struct {
		name       string
		file, ext  string
		env, sets  []string
		want       float64
		wantSource string
	}{
		{name: "default", want: 100, wantSource: "default"},
		{name: "yaml file over default", file: yamlFile, ext: ".yaml", want: 200, wantSource: "file "},
		{name: "properties file over default", file: propsFile, ext: ".properties", want: 300,
			wantSource: "file "},
		{name: "env over file", file: yamlFile, ext: ".yaml", env: []string{"NDBENCH_WORKLOAD_READRATE=400"},
			want: 400, wantSource: "env NDBENCH_WORKLOAD_READRATE"},
		{name: "--set over env", file: yamlFile, ext: ".yaml", env: []string{"NDBENCH_WORKLOAD_READRATE=400"},
			sets: []string{"workload.readRate=500"}, want: 500, wantSource: "--set"},
		{name: "--set with an NDBench name", sets: []string{"ndbench.config.readRateLimit=600"}, want: 600,
			wantSource: "--set as ndbench.config.readRateLimit"},
		{name: "later --set wins", sets: []string{"workload.readRate=1", "workload.readRate=2"}, want: 2,
			wantSource: "--set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := inputs{Env: append(slices.Clone(selectFake), tt.env...), Sets: tt.sets}
			if tt.file != "" {
				s.File = writeFile(t, "config"+tt.ext, tt.file)
			}
			snap := mustLoad(t, s)
			if got := snap.Config.Workload.ReadRate; got != tt.want {
				t.Errorf("ReadRate = %v, want %v", got, tt.want)
			}
			e := entry(t, snap, "workload.readRate")
			if !strings.HasPrefix(e.Source, tt.wantSource) {
				t.Errorf("source = %q, want prefix %q", e.Source, tt.wantSource)
			}
		})
	}
}

func TestNDBenchFileLoadsAsIs(t *testing.T) {
	path := writeFile(t, "cass.properties", `ndbench.config.numKeys=20000000
ndbench.config.numValues=1000
ndbench.config.dataSize=1024
ndbench.config.cass.colsPerRow=8
ndbench.config.numReaders=8
ndbench.config.numWriters=8
ndbench.config.cass.writeConsistencyLevel=LOCAL_QUORUM
ndbench.config.cass.readConsistencyLevel=LOCAL_QUORUM
ndbench.config.readRateLimit=7200
ndbench.config.writeRateLimit=1800
`)
	snap := mustLoad(t, inputs{File: path, Env: selectFake})
	w := snap.Config.Workload
	if w.NumKeys != 20000000 || w.NumValues != 1000 || w.DataSize != 1024 || w.Readers != 8 || w.Writers != 8 ||
		w.ReadRate != 7200 || w.WriteRate != 1800 {
		t.Errorf("workload = %+v", w)
	}
	wantNotices := []string{
		"drivers.cassandra.colsPerRow is not used by driver fake-kv",
		"drivers.cassandra.readConsistencyLevel is not used by driver fake-kv",
		"drivers.cassandra.writeConsistencyLevel is not used by driver fake-kv",
	}
	if !slices.Equal(snap.Notices, wantNotices) {
		t.Errorf("notices = %q, want %q", snap.Notices, wantNotices)
	}
	if got := snap.Config.Drivers["cassandra"]["writeConsistencyLevel"]; got != "LOCAL_QUORUM" {
		t.Errorf("cassandra options kept = %q, want LOCAL_QUORUM", got)
	}
	e := entry(t, snap, "workload.readRate")
	if e.Source != "file "+path+" as ndbench.config.readRateLimit" {
		t.Errorf("source = %q", e.Source)
	}
}

func TestYAMLFile(t *testing.T) {
	path := writeFile(t, "config.yaml", `
driver: fake-kv
drivers:
  fake-kv:
    hosts: [a:1, b:2]
    ttl: 1ms
    colsPerRow: 8
  fake-other:
    depth: 5
workload:
  numKeys: 1000000
  readRate: 0.5
  pattern: scrambled
  opTimeout: 250ms
`)
	snap := mustLoad(t, inputs{File: path})
	c := snap.Config
	if c.DriverName != "fake-kv" {
		t.Errorf("driver = %q", c.DriverName)
	}
	opts, ok := c.DriverOptions.(*fakeKVOptions)
	if !ok {
		t.Fatalf("DriverOptions is %T", c.DriverOptions)
	}
	if !slices.Equal(opts.Addrs, []string{"a:1", "b:2"}) || opts.TTL != time.Millisecond || opts.Cols != 8 || opts.Mode != "a" {
		t.Errorf("driver options = %+v", opts)
	}
	if got := c.Drivers["fake-kv"]["addrs"]; got != "a:1,b:2" {
		t.Errorf("raw addrs = %q (alias hosts should map onto addrs)", got)
	}
	w := c.Workload
	if w.NumKeys != 1000000 || w.ReadRate != 0.5 || w.Pattern != "scrambled_zipfian" || w.OpTimeout != 250*time.Millisecond {
		t.Errorf("workload = %+v", w)
	}
	if !slices.Equal(snap.Notices, []string{"drivers.fake-other.depth is not used by driver fake-kv"}) {
		t.Errorf("notices = %q", snap.Notices)
	}
	// Defaults of the selected driver are listed too, with their source.
	if e := entry(t, snap, "drivers.fake-kv.mode"); e.Value != "a" || e.Source != "default" {
		t.Errorf("mode entry = %+v", e)
	}
	if e := entry(t, snap, "drivers.fake-kv.ttl"); e.Source != "file "+path {
		t.Errorf("ttl entry = %+v", e)
	}
	if !slices.IsSortedFunc(snap.Entries, func(a, b config.Entry) int { return strings.Compare(a.Key, b.Key) }) {
		t.Error("entries are not sorted")
	}
}

func TestPropertiesFileRejectsOtherKeys(t *testing.T) {
	path := writeFile(t, "x.properties", "ndbench.config.numKeys=5\nserver.port=8080\nnumKeys=3\n")
	_, err := load(inputs{File: path, Env: selectFake})
	fes := fieldErrors(t, err)
	var fields []string
	for _, fe := range fes {
		fields = append(fields, fe.Field)
		if fe.Source != "file "+path {
			t.Errorf("source = %q", fe.Source)
		}
	}
	if !slices.Equal(fields, []string{"numKeys", "server.port"}) {
		t.Errorf("errors name %q, want numKeys and server.port", fields)
	}
}

func TestFileErrors(t *testing.T) {
	if _, err := load(inputs{File: filepath.Join(t.TempDir(), "missing.yaml")}); err == nil ||
		!strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: err = %v", err)
	}
	bad := writeFile(t, "bad.yaml", "workload: [unclosed\n")
	if _, err := load(inputs{File: bad}); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("bad yaml: err = %v", err)
	}
	badProps := writeFile(t, "bad.properties", "a=\\uXYZW\n")
	if _, err := load(inputs{File: badProps}); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad properties: err = %v", err)
	}
}

func TestYAMLDriverForms(t *testing.T) {
	for _, text := range []string{"driver: {name: fake-other}\n", "driver: fake-other\n", "DRIVER:\n  Name: fake-other\n"} {
		snap := mustLoad(t, inputs{File: writeFile(t, "c.yaml", text)})
		if snap.Config.DriverName != "fake-other" {
			t.Errorf("%q: driver = %q", text, snap.Config.DriverName)
		}
		if _, ok := snap.Config.DriverOptions.(*fakeOtherOptions); !ok {
			t.Errorf("%q: options are %T", text, snap.Config.DriverOptions)
		}
	}
}

func TestPropertiesInlineCommentIsExplained(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // parts of the message
		ok         bool
	}{
		{name: "hash comment after a number",
			text: "ndbench.config.readRateLimit=100\nndbench.config.numKeys=20000000 # Backfill keys\n",
			want: []string{`"20000000 # Backfill keys"`, "no inline comments", `"# Backfill keys"`, "line 2", "x.properties"}},
		{name: "bang comment", text: "ndbench.config.numReaders=4 ! four\n",
			want: []string{"no inline comments", `"! four"`, "line 1"}},
		{name: "a hash in a valid value is no comment", text: "ndbench.config.redis.password=pa #ss\n", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "x.properties", tt.text)
			_, err := load(inputs{File: path, Env: selectFake})
			if tt.ok {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("the value with an inline comment was accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q:\n%s", w, err)
				}
			}
		})
	}
}
