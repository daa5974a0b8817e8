package testserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// KVPackage is the import path of the key-value HTTP service KVHTTP builds and runs.
const KVPackage = "github.com/ndbench/ndbench/internal/testserver/kvhttpd"

// KVHTTP builds cmd kvhttpd (internal/testserver/kvhttpd, a small key-value HTTP
// service with status injection) into the server's directory and runs it on loopback:
// HTTP/1.1 and cleartext HTTP/2 on Port. Building needs the go command on PATH, which
// every go test run has; the build cache makes it a link step after the first time.
func KVHTTP(ctx context.Context) (*Server, error) {
	return kvHTTP(ctx, "kvhttp", "", "")
}

// KVHTTPTLS is KVHTTP serving HTTPS (HTTP/1.1 and HTTP/2 by ALPN) with the given PEM
// certificate and key.
func KVHTTPTLS(ctx context.Context, certFile, keyFile string) (*Server, error) {
	return kvHTTP(ctx, "kvhttp-tls", certFile, keyFile)
}

func kvHTTP(ctx context.Context, name, certFile, keyFile string) (*Server, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("start %s: the go command is needed to build %s: %w", name, KVPackage, err)
	}
	bin := func(s *Server) string { return filepath.Join(s.Dir, "kvhttpd") }
	ready := httpReady
	if certFile != "" {
		ready = httpsReady
	}
	return start(ctx, name, spec{
		prepare: func(ctx context.Context, s *Server) error {
			cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin(s), KVPackage)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build %s: %w: %s", KVPackage, err, tailLines(out, 20))
			}
			return nil
		},
		command: func(s *Server) (*exec.Cmd, error) {
			args := []string{"-addr", s.Addr()}
			if certFile != "" {
				args = append(args, "-cert", certFile, "-key", keyFile)
			}
			return exec.Command(bin(s), args...), nil
		},
		ready:        ready,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
	})
}

// Nginx starts Debian's nginx as a WebDAV file server on loopback, with a configuration
// of its own in Dir: GET, PUT and DELETE under /kv/ read, write and delete the files in
// NginxRoot(s)/kv (nginx's dav module), HTTP/1.1 on Port and cleartext HTTP/2 (prior
// knowledge) on Ports["h2c"]. It runs in the foreground (daemon off) with one worker,
// as nobody when the tests run as root, and logs to server.log.
func Nginx(ctx context.Context) (*Server, error) {
	bin, err := lookBinary("nginx", "/usr/sbin")
	if err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	var runAs *account
	if os.Geteuid() == 0 {
		if runAs, err = userAccount("nobody"); err != nil {
			return nil, fmt.Errorf("start nginx: %w", err)
		}
	}
	return start(ctx, "nginx", spec{
		prepare: func(_ context.Context, s *Server) error {
			return writeNginxConfig(s, runAs)
		},
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(bin, "-p", s.Dir+"/", "-c", filepath.Join(s.Dir, "nginx.conf"), "-e", "stderr"), nil
		},
		ready:        httpReady,
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGQUIT, // graceful: finish requests in flight, then exit
		stopTimeout:  defaultStopTimeout,
		extraPorts:   []string{"h2c"},
		runAs:        runAs,
	})
}

// NginxRoot returns the directory nginx serves: /kv/KEY is the file NginxRoot(s)/kv/KEY.
func NginxRoot(s *Server) string { return filepath.Join(s.Dir, "www") }

func writeNginxConfig(s *Server, runAs *account) error {
	d := func(name string) string { return filepath.Join(s.Dir, name) }
	conf := fmt.Sprintf(`# written by internal/testserver for one test server
daemon off;
master_process on;
worker_processes 1;
pid %[1]s;
error_log stderr notice;
events { worker_connections 8192; }
http {
    access_log off;
    default_type application/octet-stream;
    client_body_temp_path %[2]s;
    proxy_temp_path %[3]s/proxy;
    fastcgi_temp_path %[3]s/fastcgi;
    uwsgi_temp_path %[3]s/uwsgi;
    scgi_temp_path %[3]s/scgi;
    client_max_body_size 64m;
    client_body_buffer_size 2m;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    http2_max_concurrent_streams 1024;
    server {
        listen %[4]s:%[5]d;
        listen %[4]s:%[6]d http2;
        root %[7]s;
        location /kv/ {
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }
    }
}
`, d("nginx.pid"), d("tmp/body"), d("tmp"), Host, s.Port, s.Ports["h2c"], NginxRoot(s))
	for _, dir := range []string{"tmp", "tmp/body", "www", "www/kv"} {
		if err := os.MkdirAll(d(dir), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d(dir), err)
		}
		if runAs != nil {
			if err := os.Chown(d(dir), int(runAs.uid), int(runAs.gid)); err != nil {
				return fmt.Errorf("chown %s: %w", d(dir), err)
			}
		}
	}
	if err := os.WriteFile(d("nginx.conf"), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("write nginx.conf: %w", err)
	}
	return nil
}

// httpReady sends a plain GET and accepts any HTTP answer: a 404 is a server that serves.
func httpReady(ctx context.Context, addr string) error {
	return lineProbe(ctx, addr, "GET /health HTTP/1.0\r\nHost: "+addr+"\r\n\r\n", "HTTP/1.")
}

// httpsReady is httpReady over TLS; the certificate is not checked, only that it serves.
func httpsReady(ctx context.Context, addr string) error {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return err
	}
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, ServerName: Host}) //nolint:gosec // a readiness probe
	defer tc.Close()
	if _, err := io.WriteString(tc, "GET /health HTTP/1.0\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		return fmt.Errorf("send GET over TLS: %w", err)
	}
	buf := make([]byte, 16)
	n, err := io.ReadAtLeast(tc, buf, 8)
	if err != nil {
		return fmt.Errorf("read answer over TLS: %w", err)
	}
	if !strings.HasPrefix(string(buf[:n]), "HTTP/1.") {
		return fmt.Errorf("answer over TLS: %q", buf[:n])
	}
	return nil
}

// H2CAddr returns the address of nginx's cleartext HTTP/2 port.
func (s *Server) H2CAddr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Ports["h2c"])) }
