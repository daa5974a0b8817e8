package testserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// gremlinReadyTimeout bounds a start: a JVM on a shared CI machine.
const gremlinReadyTimeout = 60 * time.Second

// GremlinServerVersion is the Apache TinkerPop version scripts/install-gremlin-server.sh
// fetches.
const GremlinServerVersion = "3.7.3"

// GremlinKeyProperty is the vertex property the test server indexes (TinkerGraph scans
// every vertex for has() on a property without an index): the gremlin driver's default
// key property.
const GremlinKeyProperty = "prop_customId"

// GremlinServerHome returns the directory holding Gremlin Server's lib/: the environment
// variable NDBENCH_GREMLIN_SERVER_HOME, or the install script's cache
// ${NDBENCH_CACHE:-$HOME/.cache/ndbench}/gremlin-server-3.7.3.
func GremlinServerHome() string {
	if h := os.Getenv("NDBENCH_GREMLIN_SERVER_HOME"); h != "" {
		return h
	}
	return filepath.Join(CacheDir(), "gremlin-server-"+GremlinServerVersion)
}

// GremlinServer starts Apache TinkerPop's Gremlin Server (small heap) from the jars in
// GremlinServerHome, serving an empty in-memory TinkerGraph as traversal source g over
// WebSocket and HTTP on a free loopback port, with the GraphBinary and GraphSON 3
// serializers and the gremlin-groovy script engine. GremlinKeyProperty is indexed. Ready
// means an HTTP request runs a traversal on g. Expect 3-10 s to start; the graph does not
// survive a restart.
func GremlinServer(ctx context.Context) (*Server, error) {
	home := GremlinServerHome()
	jar := filepath.Join(home, "lib", "gremlin-server-"+GremlinServerVersion+".jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("start gremlin-server: %s missing (%w); %s", jar, err, installHint)
	}
	java, err := lookBinary("java")
	if err != nil {
		return nil, fmt.Errorf("start gremlin-server: %w", err)
	}
	return start(ctx, "gremlin-server", spec{
		prepare: writeGremlinConfig,
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(java, "-Xms256m", "-Xmx512m", "-XX:+UseSerialGC", jit(),
				"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
				"-cp", filepath.Join(home, "lib", "*"),
				"org.apache.tinkerpop.gremlin.server.GremlinServer",
				filepath.Join(s.Dir, "gremlin-server.yaml")), nil
		},
		ready:        gremlinReady,
		readyTimeout: gremlinReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
	})
}

func writeGremlinConfig(_ context.Context, s *Server) error {
	d := func(name string) string { return filepath.Join(s.Dir, name) }
	files := map[string]string{
		"tinkergraph.properties": "gremlin.graph=org.apache.tinkerpop.gremlin.tinkergraph.structure.TinkerGraph\n" +
			"gremlin.tinkergraph.vertexIdManager=LONG\n",
		// The init script's last value is the map of globals the server binds: g.
		"init.groovy": "graph.createIndex('" + GremlinKeyProperty + "', Vertex.class)\n" +
			"def globals = [:]\nglobals << [g : traversal().withEmbedded(graph)]\n",
		// Block style throughout: a flow-style scriptEngines map was misread by the
		// server's YAML loader (plugins landed at the top level and no engine loaded).
		// maxContentLength admits the conformance suite's 1 MiB values as base64.
		// gremlinPool: 1 evaluates one script at a time: TinkerGraph is not safe for
		// concurrent writes (an update removes a property, then adds it, in plain
		// collections, so a concurrent read finds the vertex without its value), and
		// TinkerTransactionGraph still showed such misses through its index and fails
		// concurrent upserts of a vertex with conflicts. One thread makes it a correct
		// serial store, the model a transactional JanusGraph gives its clients.
		"gremlin-server.yaml": fmt.Sprintf(`host: %s
port: %d
evaluationTimeout: 30000
gremlinPool: 1
maxContentLength: 16777216
channelizer: org.apache.tinkerpop.gremlin.server.channel.WsAndHttpChannelizer
graphs:
  graph: %s
scriptEngines:
  gremlin-groovy:
    plugins:
      org.apache.tinkerpop.gremlin.server.jsr223.GremlinServerGremlinPlugin: {}
      org.apache.tinkerpop.gremlin.tinkergraph.jsr223.TinkerGraphGremlinPlugin: {}
      org.apache.tinkerpop.gremlin.jsr223.ScriptFileGremlinPlugin:
        files: [%s]
serializers:
  - className: org.apache.tinkerpop.gremlin.util.ser.GraphBinaryMessageSerializerV1
  - className: org.apache.tinkerpop.gremlin.util.ser.GraphSONMessageSerializerV3
    config:
      ioRegistries: [org.apache.tinkerpop.gremlin.tinkergraph.structure.TinkerIoRegistryV3]
`, Host, s.Port, d("tinkergraph.properties"), d("init.groovy")),
	}
	for name, content := range files {
		if err := os.WriteFile(d(name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", d(name), err)
		}
	}
	return nil
}

// gremlinReady runs a traversal on g through the server's HTTP endpoint: the port opens
// before the script engine (and with it g) is ready, and a server whose init script
// failed answers with an error.
func gremlinReady(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/",
		strings.NewReader(`{"gremlin":"g.V().limit(1).count()"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"code":200`)) {
		return fmt.Errorf("gremlin probe: HTTP %s: %s", strconv.Itoa(resp.StatusCode), bytes.TrimSpace(body))
	}
	return nil
}
