package cli

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
)

func TestChooseThreads(t *testing.T) {
	tests := []struct {
		name      string
		in        threadInputs
		procs     int // 0: Go's setting is left alone
		why       string
		wantError string
	}{
		{name: "auto, store on this machine, 2 cores", in: threadInputs{flag: "auto", cores: 2, local: "127.0.0.1"}, procs: 1, why: "1 of 2 cores, the rest for the local store (127.0.0.1); --threads all takes all"},
		{name: "auto, store on this machine, 8 cores", in: threadInputs{flag: "auto", cores: 8, local: "localhost"}, procs: 4, why: "4 of 8 cores"},
		{name: "auto, store on this machine, 1 core", in: threadInputs{flag: "auto", cores: 1, local: "::1"}, procs: 1, why: "all 1 cores"},
		{name: "auto, no store address here", in: threadInputs{flag: "auto", cores: 2}, procs: 2, why: "all 2 cores"},
		{name: "empty is auto", in: threadInputs{cores: 4, local: "/run/postgresql"}, procs: 2},
		{name: "auto honours GOMAXPROCS in the environment", in: threadInputs{flag: "auto", cores: 2, env: "2", local: "127.0.0.1"}, procs: 0, why: "GOMAXPROCS=2 from the environment"},
		{name: "an explicit auto wins over the environment", in: threadInputs{flag: "auto", changed: true, cores: 2, env: "2", local: "127.0.0.1"}, procs: 1},
		{name: "all", in: threadInputs{flag: "all", changed: true, cores: 2, local: "127.0.0.1"}, procs: 2, why: "all 2 cores (--threads all)"},
		{name: "a number wins over the environment", in: threadInputs{flag: "3", changed: true, cores: 2, env: "1"}, procs: 3, why: "3 (--threads 3) of 2 cores"},
		{name: "upper case and spaces", in: threadInputs{flag: " ALL ", changed: true, cores: 4}, procs: 4},
		{name: "zero", in: threadInputs{flag: "0", changed: true, cores: 2}, wantError: `--threads: invalid value "0"; allowed: auto, all, or a whole number from 1 to 1024`},
		{name: "negative", in: threadInputs{flag: "-1", changed: true, cores: 2}, wantError: `invalid value "-1"`},
		{name: "too many", in: threadInputs{flag: "1025", changed: true, cores: 2}, wantError: `invalid value "1025"`},
		{name: "a word", in: threadInputs{flag: "half", changed: true, cores: 2}, wantError: `invalid value "half"`},
		{name: "a fraction", in: threadInputs{flag: "1.5", changed: true, cores: 2}, wantError: `invalid value "1.5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := chooseThreads(tt.in)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.procs != tt.procs {
				t.Errorf("procs %d, want %d (%s)", c.procs, tt.procs, c.why)
			}
			if !strings.Contains(c.why, tt.why) {
				t.Errorf("why %q, want it to contain %q", c.why, tt.why)
			}
		})
	}
}

func TestHostsInAndLocalStore(t *testing.T) {
	self := map[string]bool{"10.1.2.3": true, "benchhost": true}
	tests := []struct {
		value string
		hosts []string
		local bool
	}{
		{"postgres://postgres:secret@127.0.0.1:5432/postgres?sslmode=disable", []string{"127.0.0.1"}, true},
		{"postgres://u@db1.example.com:5432,db2.example.com/app", []string{"db1.example.com", "db2.example.com"}, false},
		{"postgres://u@/app?host=/var/run/postgresql", []string{"/var/run/postgresql"}, true},
		{"host=localhost port=5432 user=postgres password=x@y", []string{"localhost"}, true},
		{"host=10.9.9.9,10.1.2.3 dbname=x", []string{"10.9.9.9", "10.1.2.3"}, true},
		{"127.0.0.1:6379", []string{"127.0.0.1"}, true},
		{"[::1]:11211", []string{"::1"}, true},
		{"redis-0.redis:6379,redis-1.redis:6379", []string{"redis-0.redis", "redis-1.redis"}, false},
		{"benchhost:9042", []string{"benchhost"}, true},
		{"0.0.0.0:80", []string{"0.0.0.0"}, true},
		{"http://app.localhost:8080/kv", []string{"app.localhost"}, true},
		{"https://api.example.com/v1", []string{"api.example.com"}, false},
		{"GET /kv/bench", nil, false},
		{"/etc/ndbench/script.js", nil, false},
		{"read:8,write:2", []string{"read", "write"}, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got := hostsIn(tt.value)
			if strings.Join(got, "|") != strings.Join(tt.hosts, "|") {
				t.Errorf("hostsIn = %q, want %q", got, tt.hosts)
			}
			local := false
			for _, h := range got {
				local = local || isLocalHost(h, self)
			}
			if local != tt.local {
				t.Errorf("local %v, want %v", local, tt.local)
			}
		})
	}
}

func TestLocalStoreWalksOptions(t *testing.T) {
	type tls struct{ CA string }
	type child struct{ Addrs []string }
	type opts struct {
		Name     string
		Timeout  int
		TLS      tls
		Children map[string]*child
	}
	remote := &opts{Name: "x", TLS: tls{CA: "/etc/ca.pem"}, Children: map[string]*child{"cache": {Addrs: []string{"cache.example.com:6379"}}}}
	if got := localStore(remote); got != "" {
		t.Errorf("remote options: local %q, want none", got)
	}
	local := &opts{Children: map[string]*child{"cache": {Addrs: []string{"cache.example.com:6379", "127.0.0.1:6380"}}}}
	if got := localStore(local); got != "127.0.0.1" {
		t.Errorf("a child on this machine: local %q, want 127.0.0.1", got)
	}
	if got := localStore(nil); got != "" {
		t.Errorf("no options: local %q", got)
	}
}

// TestRunChoosesThreads runs the command as a user does: against a store address on this
// machine the run takes half the cores and says so; --threads all takes them all; a bad
// --threads is refused before anything runs.
func TestRunChoosesThreads(t *testing.T) {
	cores := goProcs
	tests := []struct {
		name      string
		args      []string
		env       []string
		procs     int // what the command asked GOMAXPROCS to be; 0: not changed
		note      string
		wantCode  int
		wantError string
	}{
		{name: "in-process store: every core", args: []string{"--driver", "memory"}, procs: cores},
		{name: "store on this machine", args: []string{"--driver", "postgres", "--set", "drivers.postgres.dsn=postgres://u:hunter2@127.0.0.1:1/db"}, procs: max(1, cores/2), note: "the rest for the local store (127.0.0.1)"},
		{name: "store elsewhere", args: []string{"--driver", "postgres", "--set", "drivers.postgres.dsn=postgres://u:hunter2@db.invalid:5432/db"}, procs: cores},
		{name: "--threads all", args: []string{"--driver", "postgres", "--set", "drivers.postgres.dsn=postgres://u:hunter2@127.0.0.1:1/db", "--threads", "all"}, procs: cores, note: "note: threads: all " + strconv.Itoa(cores) + " cores (--threads all)"},
		{name: "--threads 1", args: []string{"--driver", "memory", "--threads", "1"}, procs: 1, note: "note: threads: 1 (--threads 1)"},
		{name: "GOMAXPROCS in the environment", args: []string{"--driver", "postgres", "--set", "drivers.postgres.dsn=postgres://u:hunter2@127.0.0.1:1/db"}, env: []string{"GOMAXPROCS=3"}, note: "GOMAXPROCS=3 from the environment"},
		{name: "bad --threads", args: []string{"--driver", "memory", "--threads", "many"}, wantCode: 2, wantError: `--threads: invalid value "many"; allowed: auto, all, or a whole number from 1 to 1024`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			asked := 0
			s := &streams{out: &out, err: &errOut, env: tt.env, procs: func(n int) int { asked = n; return cores }}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the choice is made before the run connects; nothing needs to run
			args := append([]string{"run", "--duration", "1s"}, tt.args...)
			code := execute(ctx, args, s)
			if tt.wantError != "" {
				if code != tt.wantCode || !strings.Contains(errOut.String(), tt.wantError) {
					t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), tt.wantCode, tt.wantError)
				}
				if asked != 0 {
					t.Errorf("a refused --threads set GOMAXPROCS to %d", asked)
				}
				return
			}
			if asked != tt.procs {
				t.Errorf("GOMAXPROCS set to %d, want %d; stderr %q", asked, tt.procs, errOut.String())
			}
			if tt.procs == cores && strings.Contains(tt.note, "local store") {
				tt.note = "" // one core: nothing to leave to the store, nothing to say
			}
			if tt.note != "" && !strings.Contains(errOut.String(), tt.note) {
				t.Errorf("stderr %q, want the note %q", errOut.String(), tt.note)
			}
			if strings.Contains(errOut.String(), "hunter2") {
				t.Errorf("stderr %q shows the DSN's password", errOut.String())
			}
			if tt.note == "" && strings.Contains(errOut.String(), "threads:") {
				t.Errorf("stderr %q: a note for a run that takes every core", errOut.String())
			}
		})
	}
}

// TestThreadsNoteFitsATerminal: the note --threads auto prints fits the console's 100
// columns; it was 123 with the store's address in it. Piped it stays one line, which
// for a loopback address fits too; on a terminal a long local host name wraps under it.
func TestThreadsNoteFitsATerminal(t *testing.T) {
	long := strings.Repeat("build-agent-", 5) + "host.localhost"
	for _, tt := range []struct {
		local string
		tty   bool
	}{{"127.0.0.1", false}, {"127.0.0.1", true}, {"::1", false}, {long, true}} {
		c, err := chooseThreads(threadInputs{flag: "auto", cores: 64, local: tt.local})
		if err != nil {
			t.Fatal(err)
		}
		var errOut bytes.Buffer
		printNote(&streams{err: &errOut, tty: tt.tty}, "threads: "+c.why)
		lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
		for _, l := range lines {
			if n := len([]rune(l)); n > consoleWidth {
				t.Errorf("local %s, tty %v: a line of %d columns: %q", tt.local, tt.tty, n, l)
			}
		}
		if !strings.Contains(errOut.String(), "--threads all") || !strings.Contains(errOut.String(), tt.local) {
			t.Errorf("the note %q does not name the store or --threads all", errOut.String())
		}
	}
}

// TestScenarioChoosesThreads: scenario run takes --threads as run, serve and autotune
// do; a bad value is refused before anything runs, with what is allowed.
func TestScenarioChoosesThreads(t *testing.T) {
	file := writeScenario(t, "config: {driver: {name: memory}}\nphases: [{name: p, duration: 1s}]\n")
	cores := goProcs
	for _, tt := range []struct {
		threads   string
		procs     int
		wantCode  int
		wantError string
	}{
		{"1", 1, -1, ""},
		{"all", cores, -1, ""},
		{"many", 0, 2, `--threads: invalid value "many"; allowed: auto, all, or a whole number from 1 to 1024`},
	} {
		t.Run(tt.threads, func(t *testing.T) {
			var out, errOut bytes.Buffer
			asked := 0
			s := &streams{out: &out, err: &errOut, procs: func(n int) int { asked = n; return cores }}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the choice is made before the scenario connects; nothing needs to run
			code := execute(ctx, []string{"scenario", "run", file, "--threads", tt.threads}, s)
			if tt.wantCode >= 0 && code != tt.wantCode {
				t.Errorf("exit %d, want %d: %s", code, tt.wantCode, errOut.String())
			}
			if tt.wantError != "" && !strings.Contains(errOut.String(), tt.wantError) {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.wantError)
			}
			if asked != tt.procs {
				t.Errorf("GOMAXPROCS set to %d, want %d; stderr %q", asked, tt.procs, errOut.String())
			}
		})
	}
}
