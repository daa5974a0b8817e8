package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Readiness bounds: generous, because CI machines are small and shared.
const (
	defaultReadyTimeout   = 20 * time.Second
	cassandraReadyTimeout = 120 * time.Second
	defaultStopTimeout    = 15 * time.Second
	cassandraStopTimeout  = 30 * time.Second
)

// Redis starts redis-server with no persistence, bound to loopback on a free port.
func Redis(ctx context.Context) (*Server, error) { return RedisOn(ctx, Host) }

// RedisOn is Redis listening on host, an address of this machine other than loopback (a
// network lab's gateway, which the lab's hosts reach), with protected mode off so that
// they may connect.
func RedisOn(ctx context.Context, host string) (*Server, error) {
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, fmt.Errorf("start redis: %w", err)
	}
	return start(ctx, "redis", spec{
		command: func(s *Server) (*exec.Cmd, error) {
			// tcp-backlog: tests that open thousands of connections at once (10,000 in
			// drivers/redis) overflow Redis's default listen queue of 511 on a busy machine
			// and wait on SYN retransmits; the kernel caps it at net.core.somaxconn.
			return exec.Command(bin, "--bind", s.Host, "--port", strconv.Itoa(s.Port), "--protected-mode", "no",
				"--save", "", "--appendonly", "no", "--dir", s.Dir, "--daemonize", "no", "--tcp-backlog", "4096"), nil
		},
		ready:        redisReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
		host:         host,
	})
}

// RedisCluster starts a one-node Redis Cluster (cluster mode on, all 16384 slots assigned
// to the node) for cluster clients. Ready means CLUSTER INFO reports cluster_state:ok.
func RedisCluster(ctx context.Context) (*Server, error) {
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, fmt.Errorf("start redis cluster: %w", err)
	}
	return start(ctx, "redis-cluster", spec{
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(bin, "--bind", Host, "--port", strconv.Itoa(s.Port),
				"--save", "", "--appendonly", "no", "--dir", s.Dir, "--daemonize", "no",
				"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.Dir, "nodes.conf")), nil
		},
		ready:        redisClusterReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
	})
}

// RedisTLS starts redis-server serving TLS on Ports["tls"] with the given PEM certificate
// and key (client certificates not required), besides plain TCP on Port, which readiness
// uses.
func RedisTLS(ctx context.Context, certFile, keyFile string) (*Server, error) {
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, fmt.Errorf("start redis with tls: %w", err)
	}
	return start(ctx, "redis-tls", spec{
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(bin, "--bind", Host, "--port", strconv.Itoa(s.Port),
				"--save", "", "--appendonly", "no", "--dir", s.Dir, "--daemonize", "no",
				"--tls-port", strconv.Itoa(s.Ports["tls"]), "--tls-cert-file", certFile,
				"--tls-key-file", keyFile, "--tls-auth-clients", "no"), nil
		},
		ready:        redisReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
		extraPorts:   []string{"tls"},
	})
}

// Memcached starts memcached (TCP only, 64 MB) bound to loopback on a free port. It runs
// as nobody because memcached refuses to run as root.
func Memcached(ctx context.Context) (*Server, error) {
	bin, err := lookBinary("memcached")
	if err != nil {
		return nil, fmt.Errorf("start memcached: %w", err)
	}
	return start(ctx, "memcached", spec{
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(bin, "-u", "nobody", "-l", Host, "-p", strconv.Itoa(s.Port),
				"-U", "0", "-m", "64"), nil
		},
		ready:        memcachedReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
	})
}

// Postgres initialises a cluster in Dir/pgdata (superuser postgres, trust auth) and starts
// postgres on loopback with fsync off and its socket in Dir. As root, the binaries run
// directly as user postgres (PostgreSQL refuses root) so the harness holds the real PID.
func Postgres(ctx context.Context) (*Server, error) {
	binDir, err := postgresBinDir()
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	var runAs *account
	if os.Geteuid() == 0 {
		if runAs, err = userAccount("postgres"); err != nil {
			return nil, fmt.Errorf("start postgres: %w", err)
		}
	}
	pgdata := func(s *Server) string { return filepath.Join(s.Dir, "pgdata") }
	return start(ctx, "postgres", spec{
		prepare: func(ctx context.Context, s *Server) error {
			ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ictx, filepath.Join(binDir, "initdb"), "-D", pgdata(s),
				"-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
			cmd.Dir = s.Dir
			cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
			cmd.SysProcAttr = sysProcAttr(runAs, false)
			if out, err := cmd.CombinedOutput(); err != nil {
				_ = os.WriteFile(s.LogPath(), out, 0o644)
				return fmt.Errorf("initdb: %w: %s", err, tailLines(out, 20))
			}
			return nil
		},
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(filepath.Join(binDir, "postgres"), "-D", pgdata(s),
				"-c", "listen_addresses="+Host, "-p", strconv.Itoa(s.Port), "-k", s.Dir,
				"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
				"-c", "max_connections=200"), nil
		},
		ready:        postgresReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGINT, // fast shutdown; SIGTERM would wait for clients to leave
		stopTimeout:  defaultStopTimeout,
		runAs:        runAs,
	})
}

// postgresBinDir finds the newest /usr/lib/postgresql/N/bin, or initdb on PATH.
func postgresBinDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return pgVersion(matches[i]) > pgVersion(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	p, err := lookBinary("initdb")
	if err != nil {
		return "", err
	}
	return filepath.Dir(p), nil
}

func pgVersion(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// userAccount looks up the numeric ids of user name.
func userAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("look up user %s: %w; %s", name, err, installHint)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has non-numeric uid %q / gid %q", name, u.Uid, u.Gid)
	}
	return &account{uid: uint32(uid), gid: uint32(gid)}, nil
}

// CassandraVersion is the version scripts/install-test-deps.sh fetches.
const CassandraVersion = "5.0.9"

// CassandraHome returns the directory holding Cassandra's lib/ and conf/: the environment
// variable NDBENCH_CASSANDRA_HOME, or the install script's cache
// ${NDBENCH_CACHE:-$HOME/.cache/ndbench}/cassandra-5.0.9.
func CassandraHome() string {
	if h := os.Getenv("NDBENCH_CASSANDRA_HOME"); h != "" {
		return h
	}
	return filepath.Join(CacheDir(), "cassandra-"+CassandraVersion)
}

// Cassandra starts a single-node Cassandra (512 MB heap) from the jars in CassandraHome,
// with its CQL, storage and SSL storage ports free and bound to loopback. Ready means a CQL
// OPTIONS/STARTUP handshake succeeds. Expect 5-30 s to start and ~1.5 GB of memory.
func Cassandra(ctx context.Context) (*Server, error) {
	home := CassandraHome()
	jar := filepath.Join(home, "lib", "cassandra-all-"+CassandraVersion+".jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("start cassandra: %s missing (%w); %s", jar, err, installHint)
	}
	jamm, _ := filepath.Glob(filepath.Join(home, "lib", "jamm-*.jar"))
	if len(jamm) == 0 {
		return nil, fmt.Errorf("start cassandra: no jamm agent jar in %s/lib; %s", home, installHint)
	}
	java, err := lookBinary("java")
	if err != nil {
		return nil, fmt.Errorf("start cassandra: %w", err)
	}
	return start(ctx, "cassandra", spec{
		prepare: func(_ context.Context, s *Server) error {
			return writeCassandraConfig(s, home, jamm[0])
		},
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(java, "@"+filepath.Join(s.Dir, "jvm.options"),
				"-cp", filepath.Join(home, "conf")+":"+filepath.Join(home, "lib", "*"),
				"org.apache.cassandra.service.CassandraDaemon"), nil
		},
		ready:        cassandraReady,
		readyTimeout: cassandraReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  cassandraStopTimeout,
		extraPorts:   []string{"storage", "ssl_storage"},
	})
}

func writeCassandraConfig(s *Server, home, jamm string) error {
	d := func(name string) string { return filepath.Join(s.Dir, name) }
	yaml := fmt.Sprintf(`cluster_name: ndbench-test
num_tokens: 1
initial_token: 0
auto_bootstrap: false
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "%[1]s:%[2]d"
listen_address: %[1]s
rpc_address: %[1]s
storage_port: %[2]d
ssl_storage_port: %[3]d
start_native_transport: true
native_transport_port: %[4]d
commitlog_sync: periodic
commitlog_sync_period: 10000ms
data_file_directories:
  - %[5]s
commitlog_directory: %[6]s
saved_caches_directory: %[7]s
hints_directory: %[8]s
cdc_raw_directory: %[9]s
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
`, Host, s.Ports["storage"], s.Ports["ssl_storage"], s.Port,
		d("data"), d("commitlog"), d("saved_caches"), d("hints"), d("cdc_raw"))

	logback := `<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
`
	// The module flags are those of Cassandra's own conf/jvm17-server.options.
	exports := []string{"java.base/jdk.internal.misc", "java.management.rmi/com.sun.jmx.remote.internal.rmi",
		"java.rmi/sun.rmi.registry", "java.rmi/sun.rmi.server", "java.sql/java.sql", "java.base/java.lang.ref",
		"jdk.unsupported/sun.misc", "jdk.compiler/com.sun.tools.javac.file", "jdk.attach/sun.tools.attach"}
	opens := []string{"java.base/java.lang.module", "java.base/jdk.internal.loader", "java.base/jdk.internal.ref",
		"java.base/jdk.internal.reflect", "java.base/jdk.internal.math", "java.base/jdk.internal.module",
		"java.base/jdk.internal.util.jar", "jdk.management/com.sun.management.internal", "java.base/sun.nio.ch",
		"java.base/java.io", "java.base/java.lang.reflect", "jdk.compiler/com.sun.tools.javac",
		"java.base/java.lang", "java.base/java.util"}
	// For tests, C1 and the serial GC: a 512 MB heap needs no concurrent collector threads
	// competing with the tests for the CI's 2 cores. Benchmarks keep Cassandra's own G1.
	jvm := []string{"-Xms512M", "-Xmx512M", "-Xss256k", "-XX:+UseSerialGC", serverJIT}
	if benchmarking {
		jvm = []string{"-Xms512M", "-Xmx512M", "-Xss256k", "-XX:+UseG1GC"}
	}
	jvm = append(jvm,
		"-XX:CompileCommandFile="+filepath.Join(home, "conf", "hotspot_compiler"),
		"-Djava.net.preferIPv4Stack=true", "-Djdk.attach.allowAttachSelf=true",
		"-Dio.netty.tryReflectionSetAccessible=true", "-javaagent:"+jamm)
	for _, e := range exports {
		jvm = append(jvm, "--add-exports", e+"=ALL-UNNAMED")
	}
	for _, o := range opens {
		jvm = append(jvm, "--add-opens", o+"=ALL-UNNAMED")
	}
	jvm = append(jvm,
		"-Dcassandra.config=file://"+d("cassandra.yaml"),
		"-Dlogback.configurationFile=file://"+d("logback.xml"),
		"-Dcassandra.storagedir="+d("storage"),
		"-Dcassandra.logdir="+d("logs"),
		"-Dcassandra.triggers_dir="+d("triggers"),
		"-Dcassandra-foreground=yes",
		"-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-Dcassandra.superuser_setup_delay_ms=0",
	)
	for _, sub := range []string{"data", "commitlog", "saved_caches", "hints", "cdc_raw", "storage", "logs", "triggers"} {
		if err := os.MkdirAll(d(sub), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d(sub), err)
		}
	}
	for name, content := range map[string]string{
		"cassandra.yaml": yaml,
		"logback.xml":    logback,
		"jvm.options":    strings.Join(jvm, "\n") + "\n",
	} {
		if err := os.WriteFile(d(name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", d(name), err)
		}
	}
	return nil
}
