package testserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// GeodeVersion is the Apache Geode version scripts/install-geode.sh fetches: the newest
// whose developer REST API (the geode-web-api war) is on Maven Central.
const GeodeVersion = "1.14.4"

// GeodeRegion is the region the test server creates.
const GeodeRegion = "ndbench"

// geodeReadyTimeout bounds a start: the JVM, the member, the locator and the REST API's
// Spring application take 20-40 s on a shared CI machine.
const geodeReadyTimeout = 150 * time.Second

// GeodeHome returns the directory holding Geode's lib/, tools/Extensions/ and the
// launcher GeodeServer.java: the environment variable NDBENCH_GEODE_HOME, or the install
// script's cache ${NDBENCH_CACHE:-$HOME/.cache/ndbench}/geode-1.14.4.
func GeodeHome() string {
	if h := os.Getenv("NDBENCH_GEODE_HOME"); h != "" {
		return h
	}
	return filepath.Join(CacheDir(), "geode-"+GeodeVersion)
}

// Geode starts an Apache Geode server with an embedded locator (Ports["locator"]) and a
// cache server port (Ports["server"]), serving the developer REST API on Port at
// http://127.0.0.1:Port/geode/v1, with the PARTITION region GeodeRegion, all on loopback,
// in one JVM (small heap). Ready means a GET of the region answers 200. Expect 20-40 s to
// start and ~400 MB of memory; the region's data does not survive a restart.
func Geode(ctx context.Context) (*Server, error) {
	home := GeodeHome()
	launcher := filepath.Join(home, "GeodeServer.java")
	if _, err := os.Stat(launcher); err != nil {
		return nil, fmt.Errorf("start geode: %s missing (%w); %s", launcher, err, installHint)
	}
	java, err := lookBinary("java")
	if err != nil {
		return nil, fmt.Errorf("start geode: %w", err)
	}
	return start(ctx, "geode", spec{
		command: func(s *Server) (*exec.Cmd, error) {
			cmd := exec.Command(java, "-Xms256m", "-Xmx512m", "-XX:+UseSerialGC", jit(),
				"-cp", filepath.Join(home, "lib", "*"), launcher,
				strconv.Itoa(s.Ports["locator"]), strconv.Itoa(s.Ports["server"]), strconv.Itoa(s.Port), s.Dir)
			cmd.Env = append(os.Environ(), "GEODE_HOME="+home)
			return cmd, nil
		},
		ready:        geodeReady,
		readyTimeout: geodeReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
		extraPorts:   []string{"locator", "server"},
	})
}

// geodeReady asks the REST API for the region: the HTTP port answers 503 until the web
// application has started, and 404 until the region exists.
func geodeReady(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/geode/v1/"+GeodeRegion+"?limit=1", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("geode probe: GET /geode/v1/%s: HTTP %d", GeodeRegion, resp.StatusCode)
	}
	return nil
}
