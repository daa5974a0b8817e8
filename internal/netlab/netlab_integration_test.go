//go:build integration

package netlab_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/netlab"
)

// The test binary doubles as a process to run inside a host: NETLAB_ECHO=addr makes it an
// echo server on addr.
func TestMain(m *testing.M) {
	if addr := os.Getenv("NETLAB_ECHO"); addr != "" {
		echo(addr)
		return
	}
	os.Exit(m.Run())
}

func echo(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			line, _ := bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte(line))
		}()
	}
}

// ping says whether a line sent to addr comes back within a second.
func ping(addr string) error {
	var d net.Dialer
	return pingVia(d.DialContext, addr)
}

// pingVia is ping over a connection made by dial.
func pingVia(dial func(context.Context, string, string) (net.Conn, error), addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return fmt.Errorf("echo %q", line)
	}
	return nil
}

// A host of a lab runs a process at its own address that the test reaches; each cut
// (both ways, inbound, outbound) stops the exchange while the process lives (which
// answers from inside its host), and the heal brings it back by the time it returns; a
// delaying proxy adds its delay; the lab's namespaces are gone when its test ends.
func TestLabCutsHealsAndDelays(t *testing.T) {
	var names []string
	var gateway string
	t.Run("lab", func(t *testing.T) {
		lab := netlab.New(t, 2)
		h := lab.Hosts()[0]
		names = []string{h.Name, lab.Hosts()[1].Name}
		gateway = lab.Gateway()
		addr := net.JoinHostPort(h.Addr, "7000")
		cmd := h.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "NETLAB_ECHO="+addr)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "listening\n" {
			t.Fatalf("echo server in %s: %q %v", h.Name, line, err)
		}
		if err := ping(addr); err != nil {
			t.Fatalf("before any cut: %v", err)
		}
		for _, d := range []netlab.Direction{netlab.Both, netlab.In, netlab.Out} {
			if err := h.Cut(d); err != nil {
				t.Fatal(err)
			}
			if err := ping(addr); err == nil {
				t.Errorf("cut %v: the host still answers", d)
			}
			// From inside the host, its process is there.
			if err := pingVia(h.DialContext, addr); err != nil {
				t.Errorf("cut %v: from inside the host: %v", d, err)
			}
			if err := h.Heal(); err != nil {
				t.Fatal(err)
			}
			if err := ping(addr); err != nil {
				t.Errorf("healed after a cut %v: %v", d, err)
			}
		}
		// A heal is in effect when Heal returns, every time: the kernel brings a link back
		// some milliseconds after `ip` sets it up, and a connect sent before that waits a
		// second for its SYN's retransmission (one failed in 3 of 20 runs under load).
		for i := range 20 {
			if err := h.Cut(netlab.Both); err != nil {
				t.Fatal(err)
			}
			if err := h.Heal(); err != nil {
				t.Fatal(err)
			}
			if err := ping(addr); err != nil {
				t.Fatalf("at once after heal %d of 20: %v", i+1, err)
			}
		}
		const delay = 200 * time.Millisecond
		proxied := lab.DelayProxy(t, addr, delay)
		start := time.Now()
		if err := ping(proxied); err != nil {
			t.Fatalf("through the delay proxy: %v", err)
		}
		if rtt := time.Since(start); rtt < 2*delay {
			t.Errorf("a round trip through the %v proxy took %v, want at least %v", delay, rtt, 2*delay)
		}
	})
	for _, n := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
			t.Errorf("namespace %s left behind", n)
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == gateway {
			t.Errorf("the lab's gateway %s left behind", gateway)
		}
	}
}
