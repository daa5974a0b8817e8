package cli

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// threadsFlag is --threads: how many threads run the generator's Go code at once
// (GOMAXPROCS). Go's default is every core the process may use; on a machine whose store
// runs beside the generator that is measurably worse (docs/performance.md, "How many
// threads"): a client that needs a fraction of a core but owns two Ps wakes the idle one
// for nearly every reply (a futex, a fruitless epoll_pwait and a context switch per
// operation), which costs CPU per operation and takes the core the store needed.
type threadsFlag struct {
	value   string
	changed bool // given on the command line, so it wins over GOMAXPROCS in the environment
}

// Set, String and Type make threadsFlag a pflag.Value; its check waits for the choice,
// which reports a bad value with what is allowed.
func (t *threadsFlag) Set(v string) error { t.value, t.changed = v, true; return nil }
func (t *threadsFlag) String() string     { return t.value }

// Type names the value in the command's help.
func (t *threadsFlag) Type() string { return "auto|all|N" }

// maxThreads bounds --threads: far above any machine's cores, low enough that a typo of
// a few extra digits is refused rather than honoured with that many Ps.
const maxThreads = 1024

func (t *threadsFlag) bind(cmd *cobra.Command) {
	t.value = "auto"
	cmd.Flags().Var(t, "threads", "threads that run the generator (GOMAXPROCS): auto (half the cores when the store's address is on this machine, "+
		"every core otherwise; GOMAXPROCS in the environment wins), all, or a number")
}

// threadChoice is what --threads decided: procs threads (0 leaves Go's setting as it is),
// and why, for the note the command prints when it changes something.
type threadChoice struct {
	procs int
	why   string
}

// threadInputs are what the choice depends on, gathered by the command so the choice
// itself is a pure function.
type threadInputs struct {
	flag    string // --threads
	changed bool   // --threads was given
	cores   int    // Go's default GOMAXPROCS: the cores this process may use (CPU affinity, cgroup quota)
	env     string // GOMAXPROCS in the environment, "" when unset
	local   string // a store address of the selected driver that is on this machine, "" when none is
}

// chooseThreads decides --threads. An explicit --threads wins over GOMAXPROCS in the
// environment (the flag is nearer to the run); auto honours the environment, then leaves
// half the cores to a store on this machine, and takes every core otherwise (an
// in-process store, or one elsewhere, whose work is not on this machine's cores).
func chooseThreads(in threadInputs) (threadChoice, error) {
	v := strings.ToLower(strings.TrimSpace(in.flag))
	switch {
	case v == "" || v == "auto":
		if in.changed || in.env == "" {
			break
		}
		return threadChoice{why: fmt.Sprintf("GOMAXPROCS=%s from the environment", in.env)}, nil
	case v == "all":
		return threadChoice{procs: in.cores, why: fmt.Sprintf("all %d cores (--threads all)", in.cores)}, nil
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxThreads {
			return threadChoice{}, usageError{fmt.Errorf("--threads: invalid value %q; allowed: auto, all, or a whole number from 1 to %d", in.flag, maxThreads)}
		}
		return threadChoice{procs: n, why: fmt.Sprintf("%d (--threads %d) of %d cores", n, n, in.cores)}, nil
	}
	if in.local != "" && in.cores > 1 {
		n := in.cores / 2
		return threadChoice{procs: n, why: fmt.Sprintf("%d of %d cores, the rest for the local store (%s); --threads all takes all", n, in.cores, in.local)}, nil
	}
	return threadChoice{procs: in.cores, why: fmt.Sprintf("all %d cores", in.cores)}, nil
}

// localStore returns the first address in the driver's options (opts, the decoded options
// struct) that is on this machine, or "" when none is. Every string of the options is
// read as a possible address (a DSN, a URL, host:port, a list of them), so a driver needs
// no declaration; only literal addresses count (localhost, loopback and this machine's
// interface addresses, its host name, a Unix socket in a DSN), since resolving names
// could wait on DNS before the run starts.
func localStore(opts any) string {
	self := localAddrs()
	var found string
	walkStrings(reflect.ValueOf(opts), 0, func(s string) bool {
		for _, h := range hostsIn(s) {
			if isLocalHost(h, self) {
				found = h
				return false
			}
		}
		return true
	})
	return found
}

// walkStrings calls f with every string reachable from v (fields, elements, map values,
// through pointers and interfaces) until f returns false. Depth is bounded: options are
// shallow, and a cycle through pointers must not loop.
func walkStrings(v reflect.Value, depth int, f func(string) bool) bool {
	if depth > 6 || !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.String:
		return f(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return true
		}
		return walkStrings(v.Elem(), depth+1, f)
	case reflect.Struct:
		for i := range v.NumField() {
			if !walkStrings(v.Field(i), depth+1, f) {
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if !walkStrings(v.Index(i), depth+1, f) {
				return false
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if !walkStrings(it.Value(), depth+1, f) {
				return false
			}
		}
	}
	return true
}

// hostsIn returns the hosts s names when it reads as an address or a list of them: a URL
// (postgres://u:p@h1:5432,h2/db?host=/run/postgresql, http://h:8080/x), a key=value DSN
// (host=h1,h2 port=5432), or host[:port] items separated by commas. A Unix socket path
// is returned only from a URL's or DSN's host, where it can only be an address.
func hostsIn(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var out []string
	if i := strings.Index(s, "://"); i > 0 {
		rest := s[i+3:]
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			rest = rest[:j]
		}
		if j := strings.LastIndexByte(rest, '@'); j >= 0 {
			rest = rest[j+1:] // user info, a password among it, is never a host
		}
		out = append(out, hostList(rest)...)
		if u, err := url.Parse(s); err == nil {
			for _, h := range u.Query()["host"] {
				out = append(out, strings.Split(h, ",")...)
			}
		}
		return out
	}
	if strings.Contains(s, "=") {
		for _, kv := range strings.Fields(s) {
			k, v, ok := strings.Cut(kv, "=")
			if ok && (k == "host" || k == "hostaddr") {
				out = append(out, strings.Split(strings.Trim(v, "'"), ",")...)
			}
		}
		return out
	}
	if strings.ContainsAny(s, " /") {
		return nil // a path, a route, a sentence: not an address
	}
	return hostList(s)
}

// hostList splits "h1:1,h2,[::1]:3" into its hosts.
func hostList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if h, _, err := net.SplitHostPort(item); err == nil {
			item = h
		}
		out = append(out, strings.Trim(item, "[]"))
	}
	return out
}

// localAddrs are the names and addresses that mean this machine.
func localAddrs() map[string]bool {
	self := map[string]bool{}
	if h, err := os.Hostname(); err == nil && h != "" {
		self[strings.ToLower(h)] = true
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				self[n.IP.String()] = true
			}
		}
	}
	return self
}

// isLocalHost reports whether host, as written in an option, is this machine.
func isLocalHost(host string, self map[string]bool) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case h == "":
		return false
	case strings.HasPrefix(h, "/"), strings.HasPrefix(h, "@"):
		return true // a Unix socket (a path, or Linux's abstract namespace)
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return true
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || ip.IsUnspecified() || self[ip.String()]
	}
	return self[h]
}

// goProcs is Go's own choice of GOMAXPROCS at start-up (the environment's GOMAXPROCS when
// set), read before anything changes it.
var goProcs = runtime.GOMAXPROCS(0)

// applyThreads decides --threads for the configuration's selected driver (opts) and
// applies it through io.procs (runtime.GOMAXPROCS in the binary; nil in tests that run
// commands in-process, which must not change their own process). It returns the note to
// print: "" when auto leaves every core to the run, as Go would. A bad --threads is an
// error before anything is applied.
func applyThreads(io *streams, t threadsFlag, opts any) (string, error) {
	env := ""
	for _, kv := range io.env {
		if v, ok := strings.CutPrefix(kv, "GOMAXPROCS="); ok {
			env = v
		}
	}
	cores := goProcs
	if env != "" {
		cores = runtime.NumCPU() // the environment's figure is a setting, not the machine's
	}
	c, err := chooseThreads(threadInputs{flag: t.value, changed: t.changed, cores: cores, env: env, local: localStore(opts)})
	if err != nil {
		return "", err
	}
	if c.procs > 0 && io.procs != nil {
		io.procs(c.procs)
	}
	if c.procs == cores && env == "" && !t.changed {
		return "", nil // Go's own choice: nothing the user needs to know
	}
	return "threads: " + c.why, nil
}

// printNote prints a note (applyThreads's, the open-files limit's), if any, wrapped at the
// console's width on a terminal (a long local host name took the line past 100 columns).
func printNote(io *streams, note string) {
	if note == "" {
		return
	}
	width := 0
	if io.tty {
		width = consoleWidth
	}
	fmt.Fprintln(io.err, wrapText("note: ", note, width))
}
