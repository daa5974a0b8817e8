package testserver

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The versions scripts/install-elastic.sh fetches.
const (
	ElasticsearchVersion = "8.19.21"
	OpenSearchVersion    = "2.19.6"
)

// Elasticsearch and OpenSearch start in 10-20 s on an idle machine; CI machines are small
// and shared, so the bounds are generous.
const (
	elasticReadyTimeout = 150 * time.Second
	elasticStopTimeout  = 30 * time.Second
)

// ElasticsearchHome returns the unzipped Elasticsearch: NDBENCH_ELASTICSEARCH_HOME, or the
// install script's ${NDBENCH_CACHE:-$HOME/.cache/ndbench}/elasticsearch-8.19.21.
func ElasticsearchHome() string {
	if h := os.Getenv("NDBENCH_ELASTICSEARCH_HOME"); h != "" {
		return h
	}
	return filepath.Join(cacheDir(), "elasticsearch-"+ElasticsearchVersion)
}

// OpenSearchHome returns the unzipped OpenSearch: NDBENCH_OPENSEARCH_HOME, or the install
// script's ${NDBENCH_CACHE:-$HOME/.cache/ndbench}/opensearch-2.19.6.
func OpenSearchHome() string {
	if h := os.Getenv("NDBENCH_OPENSEARCH_HOME"); h != "" {
		return h
	}
	return filepath.Join(cacheDir(), "opensearch-"+OpenSearchVersion)
}

// cacheDir is where the install scripts put what does not come from Debian packages.
func cacheDir() string {
	if c := os.Getenv("NDBENCH_CACHE"); c != "" {
		return c
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "ndbench")
}

// Elasticsearch starts a single-node Elasticsearch 8 (security off, 512 MB heap) on
// loopback with free HTTP (Port) and transport (Ports["transport"]) ports. It runs as
// nobody because Elasticsearch refuses root; its configuration is a copy of the install's
// config/ in Dir (ES_PATH_CONF), so every server has its own. Elasticsearch runs as two
// JVMs (a launcher and the server); stopping or killing the launcher's process group
// reaches both, and Pause freezes both. Ready once GET /_cluster/health answers 200.
func Elasticsearch(ctx context.Context) (*Server, error) {
	return startElastic(ctx, elasticFlavor{
		name: "elasticsearch", home: ElasticsearchHome(), version: ElasticsearchVersion,
		yml: "elasticsearch.yml", envPrefix: "ES",
		// The integ-test zip holds x-pack-security; without this it would generate
		// certificates and passwords on the first start.
		extra: "xpack.security.enabled: false\n",
	})
}

// OpenSearch starts a single-node OpenSearch 2 (no security plugin in the integ-test zip,
// 512 MB heap) on loopback with free HTTP and transport ports, as Elasticsearch does.
func OpenSearch(ctx context.Context) (*Server, error) {
	return startElastic(ctx, elasticFlavor{
		name: "opensearch", home: OpenSearchHome(), version: OpenSearchVersion,
		yml: "opensearch.yml", envPrefix: "OPENSEARCH",
	})
}

// elasticFlavor is what differs between Elasticsearch and OpenSearch: names and the
// environment variables' prefix (ES_JAVA_HOME vs OPENSEARCH_JAVA_HOME, ...).
type elasticFlavor struct {
	name, home, version, yml, envPrefix, extra string
}

func startElastic(ctx context.Context, f elasticFlavor) (*Server, error) {
	bin := filepath.Join(f.home, "bin", f.name)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("start %s: %s missing (%w); run scripts/install-elastic.sh (or %s)", f.name, bin, err, installHint)
	}
	javaHome, err := javaHome()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", f.name, err)
	}
	var runAs *account
	if os.Geteuid() == 0 {
		if runAs, err = userAccount("nobody"); err != nil {
			return nil, fmt.Errorf("start %s: %w", f.name, err)
		}
		// The cache is under root's home, which nobody cannot enter.
		if f.home, err = sharedHome(f.home); err != nil {
			return nil, fmt.Errorf("start %s: %w", f.name, err)
		}
		bin = filepath.Join(f.home, "bin", f.name)
	}
	d := func(s *Server, name string) string { return filepath.Join(s.Dir, name) }
	return start(ctx, f.name, spec{
		prepare: func(_ context.Context, s *Server) error {
			return writeElasticConfig(s, f, runAs)
		},
		command: func(s *Server) (*exec.Cmd, error) {
			cmd := exec.Command(bin)
			// For tests, C1, with the distribution's G1 (one run with the serial GC showed
			// no gain within this package's run-to-run spread). Elasticsearch's launcher
			// JVM (OpenSearch's is a shell script) lives as long as the server and only
			// waits: C1 is enough for it too. Benchmarks keep the distribution's settings.
			opts, cli := "-Xms512m -Xmx512m "+serverJIT, serverJIT
			if benchmarking {
				opts, cli = "-Xms512m -Xmx512m", ""
			}
			cmd.Env = append(os.Environ(),
				f.envPrefix+"_JAVA_HOME="+javaHome,
				f.envPrefix+"_JAVA_OPTS="+opts,
				"CLI_JAVA_OPTS="+cli,
				f.envPrefix+"_PATH_CONF="+d(s, "config"),
				f.envPrefix+"_TMPDIR="+d(s, "tmp"),
				"HOME="+s.Dir,
			)
			return cmd, nil
		},
		ready:        elasticReady,
		readyTimeout: elasticReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  elasticStopTimeout,
		extraPorts:   []string{"transport"},
		runAs:        runAs,
	})
}

// javaHome returns ES_JAVA_HOME's value for the java on PATH (Java 17 or later is what
// both servers need; scripts/install-test-deps.sh installs 17).
func javaHome() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return h, nil
	}
	java, err := lookBinary("java")
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", java, err)
	}
	return filepath.Dir(filepath.Dir(real)), nil
}

// writeElasticConfig copies the install's config/ into Dir/config, appends the node's
// settings and makes everything the server writes owned by runAs.
func writeElasticConfig(s *Server, f elasticFlavor, runAs *account) error {
	conf := filepath.Join(s.Dir, "config")
	if err := os.CopyFS(conf, os.DirFS(filepath.Join(f.home, "config"))); err != nil {
		return fmt.Errorf("copy %s/config: %w", f.home, err)
	}
	settings := fmt.Sprintf(`
cluster.name: ndbench-test
node.name: ndbench-test
network.host: %s
http.port: %d
transport.port: %d
discovery.type: single-node
path.data: %s
path.logs: %s
# A shared test machine's disk may be fuller than the default watermarks allow.
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
%s`, Host, s.Port, s.Ports["transport"], filepath.Join(s.Dir, "data"), filepath.Join(s.Dir, "logs"), f.extra)
	yml, err := os.OpenFile(filepath.Join(conf, f.yml), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", f.yml, err)
	}
	_, err = io.WriteString(yml, settings)
	if cerr := yml.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", f.yml, err)
	}
	// The GC log goes to a path relative to the working directory, which OpenSearch's
	// launcher sets to its home (not writable by the server's user): no GC log.
	jvmPath := filepath.Join(conf, "jvm.options")
	jvm, err := os.ReadFile(jvmPath)
	if err != nil {
		return fmt.Errorf("read jvm.options: %w", err)
	}
	var kept []string
	for _, l := range strings.Split(string(jvm), "\n") {
		if !strings.Contains(l, "-Xlog:gc") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(jvmPath, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		return fmt.Errorf("write jvm.options: %w", err)
	}
	for _, sub := range []string{"data", "logs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, sub), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", sub, err)
		}
	}
	if runAs == nil {
		return nil
	}
	// The server writes its keystore into config/ and its data, logs and temp files into
	// Dir: all of it must belong to the user it runs as.
	return filepath.WalkDir(s.Dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, int(runAs.uid), int(runAs.gid)); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
		return nil
	})
}

// elasticReady asks GET /_cluster/health, which answers 200 once the node has elected
// itself master (503 before).
func elasticReady(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/_cluster/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /_cluster/health: %s", strconv.Itoa(resp.StatusCode))
	}
	return nil
}

// sharedHome returns a copy of the install home that every user can read, made once per
// install in the temporary directory of hard links (instant on the same file system, a
// copy otherwise). It is rebuilt when the install's .installed marker changed, and built
// under a temporary name then renamed, so concurrent test binaries never see half of it.
func sharedHome(home string) (string, error) {
	marker, err := os.ReadFile(filepath.Join(home, ".installed"))
	if err != nil {
		return "", fmt.Errorf("%s is not a finished install (%w); run scripts/install-elastic.sh", home, err)
	}
	target := filepath.Join(os.TempDir(), "ndbench-"+filepath.Base(home))
	if got, err := os.ReadFile(filepath.Join(target, ".installed")); err == nil && string(got) == string(marker) {
		return target, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "ndbench-"+filepath.Base(home)+"-")
	if err != nil {
		return "", fmt.Errorf("make a shared copy of %s: %w", home, err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	err = filepath.WalkDir(home, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(home, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(dst, 0o755)
		case e.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, dst)
		case rel == ".installed":
			return nil // written last, below
		}
		if os.Link(path, dst) == nil {
			return nil
		}
		return copyFile(path, dst)
	})
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, ".installed"), marker, 0o644)
	}
	if err != nil {
		return "", fmt.Errorf("make a shared copy of %s: %w", home, err)
	}
	_ = os.RemoveAll(target) // an outdated copy
	if err := os.Rename(tmp, target); err != nil {
		// Another test binary won the race; its copy is as good.
		if got, rerr := os.ReadFile(filepath.Join(target, ".installed")); rerr == nil && string(got) == string(marker) {
			return target, nil
		}
		return "", fmt.Errorf("make a shared copy of %s: %w", home, err)
	}
	return target, nil
}

// copyFile copies src to dst with src's permissions.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, st.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
