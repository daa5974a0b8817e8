//go:build linux

package netlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// prefix starts the name of every namespace a lab makes: "ndbl-<pid>-<random>-...".
const prefix = "ndbl-"

// Lab is n hosts (network namespaces) on one bridge. The bridge lives in a namespace of
// its own (the hub), so the lab touches nothing of the machine's network but one veth
// pair that joins the test process to it (Gateway).
type Lab struct {
	t     testing.TB
	id    string // prefix, pid and random: every namespace's name starts with it
	hub   string
	net   string // the /24's first three octets, "10.a.b"
	hosts []*Host
	gwDev string // the test's end of its veth pair into the hub
}

// Host is one namespace of a Lab, with one interface (eth0) on the lab's bridge.
type Host struct {
	// Name is the namespace's name (for `ip netns exec`), Addr its IPv4 address.
	Name, Addr string
	lab        *Lab
	port       string // its bridge port in the hub
	mu         sync.Mutex
	cuts       map[Direction]bool
}

// New makes a lab of n hosts, 10.a.b.1 to 10.a.b.n (a and b random), and a gateway for
// the test process at 10.a.b.254; everything is removed when t ends. Where namespaces
// cannot be made it skips t, or fails it under CI=true.
func New(t testing.TB, n int) *Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable(t, "no ip command (iproute2)")
	}
	if _, err := exec.LookPath("tc"); err != nil {
		unavailable(t, "no tc command (iproute2)")
	}
	sweep()
	var r [4]byte
	_, _ = rand.Read(r[:])
	l := &Lab{t: t, id: fmt.Sprintf("%s%d-%s", prefix, os.Getpid(), hex.EncodeToString(r[:2]))}
	l.hub = l.id + "-hub"
	l.gwDev = "nlg" + hex.EncodeToString(r[:]) // 11 characters: names are at most 15
	l.net = freeNet()
	if l.net == "" {
		t.Fatal("netlab: no free 10.x.y.0/24 on this machine")
	}
	t.Cleanup(l.remove)
	if err := ip("netns", "add", l.hub); err != nil {
		unavailable(t, err.Error())
	}
	steps := [][]string{
		{"-n", l.hub, "link", "set", "lo", "up"},
		{"-n", l.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", l.hub, "link", "set", "br0", "up"},
		{"link", "add", l.gwDev, "type", "veth", "peer", "name", "gw", "netns", l.hub},
		{"-n", l.hub, "link", "set", "gw", "master", "br0", "up"},
		{"addr", "add", l.net + ".254/24", "dev", l.gwDev},
		{"link", "set", l.gwDev, "up"},
	}
	for i := range n {
		h := &Host{Name: fmt.Sprintf("%s-h%d", l.id, i), Addr: fmt.Sprintf("%s.%d", l.net, i+1), lab: l,
			port: fmt.Sprintf("h%d", i), cuts: map[Direction]bool{}}
		l.hosts = append(l.hosts, h)
		steps = append(steps,
			[]string{"netns", "add", h.Name},
			[]string{"-n", h.Name, "link", "set", "lo", "up"},
			[]string{"-n", l.hub, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.Name},
			[]string{"-n", l.hub, "link", "set", h.port, "master", "br0", "up"},
			[]string{"-n", h.Name, "addr", "add", h.Addr + "/24", "dev", "eth0"},
			[]string{"-n", h.Name, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Fatalf("netlab: make the lab: %v", err)
		}
	}
	return l
}

// Hosts returns the lab's hosts, in address order.
func (l *Lab) Hosts() []*Host { return l.hosts }

// Gateway returns the test process's address on the lab's network: every host reaches
// it, and it reaches every host whose link is not cut.
func (l *Lab) Gateway() string { return l.net + ".254" }

// remove deletes the gateway's veth pair and the lab's namespaces. The pair goes first:
// the kernel destroys a deleted namespace's devices later, in the background.
func (l *Lab) remove() {
	if err := ip("link", "del", l.gwDev); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		l.t.Errorf("netlab: remove the gateway: %v", err)
	}
	for _, h := range l.hosts {
		if err := ip("netns", "del", h.Name); err != nil {
			l.t.Errorf("netlab: remove host: %v", err)
		}
	}
	if err := ip("netns", "del", l.hub); err != nil {
		l.t.Errorf("netlab: remove hub: %v", err)
	}
}

// Command returns name run with args inside the host's namespace (`ip netns exec`, which
// execs name: the command's process is name's own).
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Cut drops the host's packets in direction d, its processes left as they are: Both sets
// its bridge port down (a pulled cable), In and Out give the bridge's port or the host's
// interface a queue of length 0, which drops everything sent through it. Cuts add up
// until Heal.
func (h *Host) Cut(d Direction) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cuts[d] {
		return nil
	}
	var err error
	switch d {
	case Both:
		err = ip("-n", h.lab.hub, "link", "set", h.port, "down")
	case In:
		err = tc("-n", h.lab.hub, "qdisc", "add", "dev", h.port, "root", "pfifo", "limit", "0")
	case Out:
		err = tc("-n", h.Name, "qdisc", "add", "dev", "eth0", "root", "pfifo", "limit", "0")
	default:
		err = fmt.Errorf("netlab: cut %v: direction is one of Both, In, Out", d)
	}
	if err != nil {
		return fmt.Errorf("netlab: cut %s %v: %w", h.Addr, d, err)
	}
	h.cuts[d] = true
	return nil
}

// Heal undoes every cut of the host.
func (h *Host) Heal() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []string
	healed := len(h.cuts) > 0
	for d := range h.cuts {
		var err error
		switch d {
		case Both:
			err = ip("-n", h.lab.hub, "link", "set", h.port, "up")
		case In:
			err = tc("-n", h.lab.hub, "qdisc", "del", "dev", h.port, "root")
		case Out:
			err = tc("-n", h.Name, "qdisc", "del", "dev", "eth0", "root")
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		delete(h.cuts, d)
	}
	if errs != nil {
		return fmt.Errorf("netlab: heal %s: %s", h.Addr, strings.Join(errs, "; "))
	}
	if healed {
		// After every cut is undone, not after each: a probe cannot pass while another
		// direction is still cut.
		return h.waitLinkUp()
	}
	return nil
}

// linkUpWithin bounds Heal's wait for the kernel to bring a host's link back.
const linkUpWithin = 10 * time.Second

// waitLinkUp returns once the host's link carries packets again after its cuts were
// undone. Setting a veth up only raises the carrier of both its ends; the kernel makes
// that a working link (operstate UP, the device's queue activated, then the bridge port
// forwarding) later, in its link-watch work, which a loaded machine runs some
// milliseconds after `ip` has returned. A packet sent in between is dropped, and a TCP
// connect made then waits for its SYN's retransmission, a second later: a test's
// one-second ping right after a heal failed so in 3 of 20 runs beside two busy loops.
// The states say when to start probing; the probe says when packets pass.
func (h *Host) waitLinkUp() error {
	deadline := time.Now().Add(linkUpWithin)
	for {
		port, perr := linkState(h.lab.hub, h.port)
		eth, eerr := linkState(h.Name, "eth0")
		if err := errors.Join(perr, eerr); err != nil {
			return err
		}
		up := port.Operstate == "UP" && port.Linkinfo.SlaveData.State == "forwarding" && eth.Operstate == "UP"
		var probeErr error
		if up {
			if probeErr = h.probe(); probeErr == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netlab: heal %s: its link is not up %v after setting it up (bridge port %s, %s; eth0 %s; probe: %v)",
				h.Addr, linkUpWithin, port.Operstate, port.Linkinfo.SlaveData.State, eth.Operstate, probeErr)
		}
		time.Sleep(time.Millisecond)
	}
}

// probeWithin bounds one probe of a host's link: a reply on loopback veths takes
// microseconds, and a dropped one would be retransmitted only a second later.
const probeWithin = 50 * time.Millisecond

// probe says whether a packet to the host and its answer both pass: a TCP connect from
// the test process to a port no one listens on (1), answered by the host's kernel with a
// reset (or accepted, should something listen there). The link's states are not enough:
// the kernel sets eth0's operstate UP in its link-watch work just before it gives the
// device its queue back (until then every packet it sends is dropped), and a connect
// whose SYN-ACK is dropped that way waits a second for the retransmission (one in 15
// heals beside two busy loops after the states were UP). TCP, not ICMP: the host's kernel
// rate-limits port-unreachable messages, not resets.
func (h *Host) probe() error {
	d := net.Dialer{Timeout: probeWithin}
	c, err := d.Dial("tcp", net.JoinHostPort(h.Addr, "1"))
	if err == nil {
		return c.Close()
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil
	}
	return err
}

// link is what waitLinkUp reads of `ip -j -d link show`.
type link struct {
	Operstate string `json:"operstate"`
	Linkinfo  struct {
		SlaveData struct {
			State string `json:"state"` // a bridge port's: disabled, forwarding, ...
		} `json:"info_slave_data"`
	} `json:"linkinfo"`
}

// linkState returns the state of device dev in namespace ns.
func linkState(ns, dev string) (link, error) {
	out, err := exec.Command("ip", "-n", ns, "-j", "-d", "link", "show", "dev", dev).Output()
	if err != nil {
		return link{}, fmt.Errorf("netlab: state of %s in %s: %w", dev, ns, err)
	}
	var links []link
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return link{}, fmt.Errorf("netlab: state of %s in %s: %q: %v", dev, ns, bytes.TrimSpace(out), err)
	}
	return links[0], nil
}

// DialContext connects to addr from inside the host's namespace, whatever its link: the
// test reaches a process on a cut-off host at the host's own address this way (as
// http.Transport.DialContext). The socket is made on a thread that entered the namespace
// and then returns to the test's own before the runtime may use it again. A thread that
// cannot return stays locked and ends with its goroutine; threads are not ended
// otherwise, as a child process started with a parent-death signal (the test servers)
// gets it when the thread that started it ends.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		back, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("netlab: open this thread's namespace: %w", err)}
			return
		}
		defer unix.Close(back)
		fd, err := unix.Open("/run/netns/"+h.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("netlab: open namespace %s: %w", h.Name, err)}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("netlab: enter namespace %s: %w", h.Name, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if unix.Setns(back, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

func ip(args ...string) error { return run("ip", args...) }
func tc(args ...string) error { return run("tc", args...) }

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// freeNet returns a random "10.a.b" whose /24 no interface of this namespace is in (a
// lab's gateway is), or "" after many tries.
func freeNet() string {
	addrs, _ := net.InterfaceAddrs()
	for range 64 {
		var r [2]byte
		_, _ = rand.Read(r[:])
		cand := fmt.Sprintf("10.%d.%d", 100+int(r[0])%100, r[1])
		_, cidr, _ := net.ParseCIDR(cand + ".0/24")
		taken := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && cidr.Contains(ipn.IP) {
				taken = true
			}
		}
		if !taken {
			return cand
		}
	}
	return ""
}

// sweep removes the namespaces of labs whose test process is gone (it crashed, or was
// killed before its cleanup ran).
func sweep() {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(name, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = ip("netns", "del", e.Name())
	}
}

// DelayProxy forwards TCP connections made to the address it returns (on the lab's
// gateway) to target, each byte d later in either direction: a slow link where the
// kernel has no netem. Its listener closes when t ends.
func (l *Lab) DelayProxy(t testing.TB, target string, d time.Duration) string {
	t.Helper()
	return delayProxy(t, l.Gateway(), target, d)
}
