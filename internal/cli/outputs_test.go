package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An output path the end of the run could not write is refused before any load: a report
// refused after hours of load loses everything they measured.
func TestUnwritableOutputsAreRefusedBeforeTheLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir", "r.json")
	scen := writeScenario(t, `
config: {driver: {name: memory}, workload: {readRate: 100, writeEnabled: false, numKeys: 100}}
phases: [{name: p, duration: 200ms}]
`)
	cases := []struct {
		name     string
		args     []string
		flag     string
		loadSign string // printed once the load starts: must not appear
	}{
		{"run report", []string{"run", "--driver", "memory", "--duration", "200ms", "--report", missing}, "--report", "ndbench "},
		{"run report is a directory", []string{"run", "--driver", "memory", "--duration", "200ms", "--report", dir}, "--report", "ndbench "},
		{"run report-html", []string{"run", "--driver", "memory", "--duration", "200ms", "--report-html", missing}, "--report-html", "ndbench "},
		{"serve report", []string{"serve", "--listen", "127.0.0.1:0", "--report", missing}, "--report", "serving on"},
		{"autotune report-html", []string{"autotune", "--driver", "memory", "--max-rate", "200", "--report-html", missing}, "--report-html", "step"},
		{"scenario junit", []string{"scenario", "run", scen, "--junit", missing}, "--junit", "phase"},
		{"scenario markdown", []string{"scenario", "run", scen, "--markdown", missing}, "--markdown", "phase"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ndbench(t, nil, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (bad usage)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, c.flag+":") {
				t.Errorf("error does not name %s: %s", c.flag, stderr)
			}
			if strings.Contains(stdout, c.loadSign) {
				t.Errorf("the load ran before the path was checked:\n%s", stdout)
			}
		})
	}
	// The check leaves nothing behind in a directory it could write to.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".ndbench") {
			t.Errorf("left %s behind", e.Name())
		}
	}
}

// An output never replaces a file the command reads, nor another output: refused before
// any load, exit 2 naming the flag, whatever path spells the same file (relative, through
// a symlink, a hard link); the input is left as it was.
func TestOutputsNeverReplaceInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := write("ndbench.yaml", "workload: {readRate: 100, writeEnabled: false, numKeys: 100}\n")
	preset := write("preset.yaml", "workload: {readRate: 50}\n")
	clusters := write("clusters.json", `{"clusters": []}`)
	if err := os.Symlink(cfg, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(cfg, filepath.Join(dir, "hard.yaml")); err != nil {
		t.Fatal(err)
	}
	scenText := `
configFile: ndbench.yaml
config: {driver: {name: memory}}
phases: [{name: p, duration: 200ms}]
`
	scen := write("s.yaml", scenText)
	// A scenario file that --out-dir would write over: its name is one of the outputs'.
	scenInOut := write("out/junit.xml", "config: {driver: {name: memory}}\nphases: [{name: p, duration: 200ms}]\n")
	run := []string{"run", "--driver", "memory", "--duration", "200ms"}
	cases := []struct {
		name string
		args []string
		flag string // named by the error
		also string // also in the error
	}{
		{"run --report onto -c", append(run, "-c", cfg, "--report", cfg), "--report", "the --config file"},
		{"run --report-html onto -c, spelled otherwise", append(run, "-c", cfg, "--report-html", filepath.Join(dir, "out", "..", "ndbench.yaml")), "--report-html", "the --config file"},
		{"run --hdr-log onto -c through a symlink", append(run, "-c", cfg, "--hdr-log", filepath.Join(dir, "link.yaml")), "--hdr-log", "the --config file"},
		{"run --report onto a hard link of -c", append(run, "-c", cfg, "--report", filepath.Join(dir, "hard.yaml")), "--report", "the --config file"},
		{"run --report onto the --workload file", append(run, "-w", preset, "--report", preset), "--report", "the --workload file"},
		{"run --hdr-log onto --report", append(run, "--report", filepath.Join(dir, "r.json"), "--hdr-log", filepath.Join(dir, "r.json")), "--hdr-log", "--report"},
		{"run --report-html onto --report", append(run, "--report", filepath.Join(dir, "r.json"), "--report-html", filepath.Join(dir, ".", "r.json")), "--report-html", "--report"},
		{"run --junit onto --report", append(run, "--report", filepath.Join(dir, "r.json"), "--junit", filepath.Join(dir, "r.json")), "--junit", "--report"},
		{"run --report onto the --from-report file", append(run, "--from-report", cfg, "--report", cfg), "--report", "the --from-report file"},
		{"serve --report onto -c", []string{"serve", "--listen", "127.0.0.1:0", "-c", cfg, "--report", cfg}, "--report", "the --config file"},
		{"serve --report onto the --discovery file", []string{"serve", "--listen", "127.0.0.1:0", "--driver", "memory", "--discovery", "file:" + clusters, "--report", clusters}, "--report", "the --discovery file"},
		{"autotune --report onto -c", []string{"autotune", "--driver", "memory", "--max-rate", "200", "-c", cfg, "--report", cfg}, "--report", "the --config file"},
		{"scenario --report onto the scenario file", []string{"scenario", "run", scen, "--report", scen}, "--report", "the scenario file"},
		{"scenario --junit onto its configFile", []string{"scenario", "run", scen, "--junit", cfg}, "--junit", "configFile"},
		{"scenario --out-dir onto the scenario file", []string{"scenario", "run", scenInOut, "--out-dir", filepath.Join(dir, "out")}, "--out-dir", "the scenario file"},
		{"scenario --markdown onto --report", []string{"scenario", "run", scen, "--report", filepath.Join(dir, "r.md"), "--markdown", filepath.Join(dir, "r.md")}, "--markdown", "--report"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ndbench(t, nil, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (bad usage)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, c.flag+":") || !strings.Contains(stderr, c.also) {
				t.Errorf("error does not name %s and %q: %s", c.flag, c.also, stderr)
			}
			if strings.Contains(stdout, "ndbench ") {
				t.Errorf("the load ran before the paths were checked:\n%s", stdout)
			}
		})
	}
	for p, want := range map[string]string{cfg: "workload: {readRate: 100, writeEnabled: false, numKeys: 100}\n", preset: "workload: {readRate: 50}\n", scen: scenText} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s changed: %q (%v)", p, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); err == nil {
		t.Error("a refused run wrote r.json")
	}
}

// An output that replaces an existing file is not refused (reruns into the same report
// path are common) but said on stderr, once per output.
func TestOutputReplacingAFileIsSaid(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	if err := os.WriteFile(rep, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "r.html")
	code, stdout, stderr := ndbench(t, nil, "run", "--driver", "memory", "--duration", "200ms", "--set", "workload.readRate=100",
		"--report", rep, "--report-html", fresh)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := strings.Count(stderr, "note: --report "+rep+" exists"); n != 1 {
		t.Errorf("%d notes that --report replaces %s, want 1:\n%s", n, rep, stderr)
	}
	if strings.Contains(stderr, "--report-html") {
		t.Errorf("a new file is said to be replaced:\n%s", stderr)
	}
	readReport(t, rep) // replaced by the run's report
}
