//go:build integration

package cli

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
)

// ndbenchBinary returns the ndbench binary the package's integration tests share.
func ndbenchBinary(t *testing.T) string {
	t.Helper()
	fleetBin.once.Do(func() {
		if fleetBin.dir, fleetBin.err = os.MkdirTemp("", "ndbench-cli-fleet-"); fleetBin.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		fleetBin.path, fleetBin.err = testserver.BuildNdbench(ctx, fleetBin.dir)
	})
	if fleetBin.err != nil {
		t.Fatal(fleetBin.err)
	}
	return fleetBin.path
}

// hdrLogLine is one interval line of an HDR log: its tag and when it ended.
type hdrLogLine struct {
	tag        string
	start, end time.Time
}

// readHDRLog parses an HDR log as a user's tool would after a crash: every line whole and
// decodable, the intervals of each tag back to back.
func readHDRLog(t *testing.T, path string) []hdrLogLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var base time.Time
	var lines []hdrLogLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if b, ok := strings.CutPrefix(l, "#[BaseTime: "); ok {
			sec, err := strconv.ParseFloat(strings.Fields(b)[0], 64)
			if err != nil {
				t.Fatalf("line %d: %q: %v", n, l, err)
			}
			base = time.UnixMilli(int64(sec * 1000))
		}
		if !strings.HasPrefix(l, "Tag=") {
			continue
		}
		f := strings.Split(l, ",")
		if len(f) != 5 {
			t.Fatalf("line %d is torn: %.80q", n, l)
		}
		start, err1 := strconv.ParseFloat(f[1], 64)
		length, err2 := strconv.ParseFloat(f[2], 64)
		_, err3 := stats.DecodeHistogram([]byte(f[4]))
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("line %d does not parse (%v, %v, %v): %.80q", n, err1, err2, err3, l)
		}
		s := base.Add(time.Duration(start * float64(time.Second)))
		lines = append(lines, hdrLogLine{tag: strings.TrimPrefix(f[0], "Tag="), start: s, end: s.Add(time.Duration(length * float64(time.Second)))})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestHDRLogSurvivesKill9 is issue 39's crash: `ndbench run --hdr-log` (and serve's) killed with
// SIGKILL (no handler runs, nothing is flushed on the way out) leaves a log that a tool
// reads whole, whose intervals follow each other without a gap up to at most one second
// before the kill: each interval reaches the file as it closes. Several kills land at
// different points of the second.
func TestHDRLogSurvivesKill9(t *testing.T) {
	bin := ndbenchBinary(t)
	// run three times, serve (its log spans every driver session) twice.
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "run.hlog")
		args := []string{"run", "--duration", "5m"}
		if round >= 3 {
			args = []string{"serve", "--listen", "127.0.0.1:0", "--start"}
		}
		cmd := exec.Command(bin, append(args, "--driver", "memory", "--hdr-log", path,
			"--set", "workload.readRate=2000", "--set", "workload.writeRate=500")...)
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		// Wait for a few intervals, then kill at a point of the second that differs from
		// round to round.
		deadline := time.Now().Add(time.Minute)
		for {
			if b, _ := os.ReadFile(path); strings.Count(string(b), "Tag=read-response") >= 3 {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatal("no three intervals in the HDR log within a minute")
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Duration(300+350*(round%3)) * time.Millisecond)
		killed := time.Now()
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-done

		lines := readHDRLog(t, path)
		last := map[string]hdrLogLine{}
		for _, l := range lines {
			// Start and length are written to the millisecond, each rounded.
			if p, ok := last[l.tag]; ok && (l.start.Sub(p.end) > 2*time.Millisecond || p.end.Sub(l.start) > 2*time.Millisecond) {
				t.Errorf("round %d: %s: an interval from %v after one that ended %v", round, l.tag, l.start, p.end)
			}
			last[l.tag] = l
		}
		for _, tag := range []string{"read-response", "read-service", "write-response", "write-service"} {
			l, ok := last[tag]
			if !ok {
				t.Fatalf("round %d: no %s interval in the log", round, tag)
			}
			// At most the second in progress is lost, and the tick that closes a second
			// may run late on a loaded machine: 250 ms is allowed for it.
			lost := killed.Sub(l.end)
			t.Logf("round %d: %s: the last interval ended %v before the kill", round, tag, lost.Round(time.Millisecond))
			if lost > time.Second+250*time.Millisecond {
				t.Errorf("round %d: %s: the log ends %v before the kill; want at most the second in progress lost", round, tag, lost.Round(time.Millisecond))
			}
		}
	}
}
