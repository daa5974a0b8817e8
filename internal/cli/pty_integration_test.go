//go:build integration && linux

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of cols columns (Linux: /dev/ptmx) and returns its
// controller and the terminal a child gets as its stdio.
func openPTY(t *testing.T, cols, rows uint16) (ctl, term *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = ctl.Close() })
	fd := int(ctl.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("name the pseudo-terminal: %v", err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal side: %v", err)
	}
	t.Cleanup(func() { _ = term.Close() })
	if err := unix.IoctlSetWinsize(int(term.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatalf("size the terminal %dx%d: %v", cols, rows, err)
	}
	return ctl, term
}

// screen replays what a terminal of cols columns shows of out: "\r" returns to the line's
// start, "\n" starts the next, CSI K erases to the line's end and other escape sequences
// draw nothing. It returns the lines as they were last drawn and every character that
// landed past column cols (which a terminal would have wrapped onto a line of its own).
func screen(out []byte, cols int) (lines []string, over []string) {
	var line []rune
	col := 0
	flush := func() {
		lines = append(lines, strings.TrimRight(string(line), " "))
		line, col = line[:0], 0
	}
	for len(out) > 0 {
		r, n := utf8.DecodeRune(out)
		out = out[n:]
		switch {
		case r == '\r':
			col = 0
		case r == '\n':
			flush()
		case r == 0x1b && len(out) > 0 && out[0] == '[':
			end := bytes.IndexFunc(out[1:], func(c rune) bool { return c >= 0x40 && c <= 0x7e })
			if end < 0 {
				return lines, over
			}
			if out[1+end] == 'K' {
				line = line[:min(col, len(line))]
			}
			out = out[2+end:]
		case r < ' ':
		default:
			if col >= cols {
				over = append(over, string(line)+string(r))
			}
			for len(line) <= col {
				line = append(line, ' ')
			}
			line[col] = r
			col++
		}
	}
	if len(line) > 0 {
		flush()
	}
	return lines, over
}

// TestRunConsoleFitsA100ColumnTerminal: `ndbench run` in a real 100-column terminal (a
// pseudo-terminal, so the progress bar and the redrawn status line are on, as a user sees
// them) draws nothing past column 100: the header, the backfill bar, every live line,
// the start-lag warnings of a stalling store, the summary and the verdict (issue 36).
func TestRunConsoleFitsA100ColumnTerminal(t *testing.T) {
	dir := t.TempDir()
	args, _ := json.Marshal([]string{"run", "--driver", "memory", "--warmup", "1s", "--duration", "3s", "--backfill",
		"--set", "workload.numKeys=1500", "--set", "workload.backfillRate=1000",
		"--set", "workload.readRate=500", "--set", "workload.writeRate=100", "--set", "drivers.memory.stallEvery=1s",
		"--set", "drivers.memory.stallFor=300ms", "--set", "workload.opTimeout=2s", "--report", dir + "/r.json"})
	ctl, term := openPTY(t, 100, 50)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNdbenchMain$")
	cmd.Env = append(os.Environ(), helperArgsEnv+"="+string(args), "XDG_DATA_HOME="+dir, "HOME="+dir, "TERM=xterm", "COLUMNS=100")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	_ = term.Close() // the child holds it; the controller reads EIO once the child is gone
	read := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		_, err := io.Copy(&b, ctl)
		if err != nil && !errors.Is(err, syscall.EIO) {
			fmt.Fprintf(&b, "\n(read: %v)", err)
		}
		read <- b.Bytes()
	}()
	var out []byte
	select {
	case out = <-read:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("ndbench run did not end in 2 minutes:\n%s", <-read)
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		// 1 (failed) or 4 (invalid: a loaded machine's generator fell short) are verdicts
		// this test does not judge; 2 and 3 are a usage error and an interruption.
		if !errors.As(err, &ee) || (ee.ExitCode() != 1 && ee.ExitCode() != 4) {
			t.Fatalf("ndbench run: %v\n%s", err, out)
		}
	}
	lines, over := screen(out, 100)
	seen := map[string]bool{}
	for _, l := range over {
		if key := string([]rune(l)[:60]); !seen[key] {
			seen[key] = true
			t.Errorf("drawn past column 100: %q", l)
		}
	}
	live, warnings, bars := 0, 0, 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "["):
			live++
		case strings.HasPrefix(l, "WARNING: "):
			warnings++
		}
	}
	// The backfill's bar is redrawn in place and cleared: it shows in the raw output only.
	bars = strings.Count(string(out), "] backfill ")
	if live == 0 || warnings == 0 || bars == 0 || !strings.Contains(string(out), "\r") {
		t.Errorf("%d live lines, %d warnings, %d backfill bar draws, want a terminal's output with each:\n%s", live, warnings, bars, strings.Join(lines, "\n"))
	}
	if t.Failed() {
		t.Logf("the screen:\n%s", strings.Join(lines, "\n"))
	}
}
