package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CertFiles is a TLS certificate and its private key read from two PEM files, and read
// again when either changes: a renewed certificate (cert-manager rewrites a mounted
// Secret in place) is served from the next handshake on, without a restart. It serves a
// listener (GetCertificate) and, for a fleet's calls, a client (GetClientCertificate).
type CertFiles struct {
	certFile, keyFile string

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp [2]fileStamp // of certFile and keyFile when cert was read
}

// fileStamp is what tells that a file changed without reading it.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{size: -1}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

// LoadCertFiles reads a certificate (PEM, the leaf first, then any intermediates) and its
// private key (PEM). The error names the files and what is wrong, never the key.
func LoadCertFiles(certFile, keyFile string) (*CertFiles, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("a TLS certificate needs both files: --tls-cert (the certificate) and --tls-key (its private key)")
	}
	c := &CertFiles{certFile: certFile, keyFile: keyFile}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again and, when they hold a valid pair, serves it from the next
// handshake. A pair that fails (a half-written rotation, a key that does not match)
// changes nothing: the certificate in force stays. It reports whether the certificate
// changed.
func (c *CertFiles) Reload() (changed bool, err error) {
	stamp := [2]fileStamp{stampOf(c.certFile), stampOf(c.keyFile)}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		// crypto/tls's messages say what is wrong (no PEM data, a key that does not
		// match) and never quote the key.
		return false, fmt.Errorf("TLS certificate %s with key %s: %w", c.certFile, c.keyFile, err)
	}
	if len(pair.Certificate) == 0 {
		return false, fmt.Errorf("TLS certificate %s holds no certificate", c.certFile)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false, fmt.Errorf("TLS certificate %s: %w", c.certFile, err)
	}
	pair.Leaf = leaf
	c.mu.Lock()
	defer c.mu.Unlock()
	changed = c.cert == nil || !equalChains(c.cert.Certificate, pair.Certificate)
	c.cert, c.stamp = &pair, stamp
	return changed, nil
}

func equalChains(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}

// Leaf returns the certificate in force (parsed).
func (c *CertFiles) Leaf() *x509.Certificate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert.Leaf
}

// GetCertificate serves the certificate in force (tls.Config.GetCertificate).
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, nil
}

// GetClientCertificate presents the certificate in force to a server that asks for one
// (tls.Config.GetClientCertificate).
func (c *CertFiles) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, nil
}

// ServerConfig is the TLS configuration of a listener serving these files: TLS 1.2 at
// least, the certificate re-read as the files change.
func (c *CertFiles) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
}

// Watch reloads the files when the modification time or size of either changes (looked
// at every interval; TokenPollInterval when 0) and, on Unix, on SIGHUP, until ctx ends. A
// reload that fails is logged and the certificate in force stays.
func (c *CertFiles) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = TokenPollInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hup, stop := reloadSignal()
	defer stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	reload := func(why string) {
		changed, err := c.Reload()
		if err != nil {
			log.Warn("TLS certificate not reloaded; the one in force stays", "why", why, "err", err)
			return
		}
		if changed {
			leaf := c.Leaf()
			log.Info("TLS certificate reloaded", "why", why, "file", c.certFile, "subject", leaf.Subject.String(),
				"notAfter", leaf.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload("signal")
		case <-tick.C:
			now := [2]fileStamp{stampOf(c.certFile), stampOf(c.keyFile)}
			c.mu.Lock()
			same := now == c.stamp
			if !same {
				// Looked at once per change: a failed pair is tried again when a file
				// changes again (the other half of a rotation), not every tick.
				c.stamp = now
			}
			c.mu.Unlock()
			if !same && now[0].size >= 0 && now[1].size >= 0 {
				reload("file changed")
			}
		}
	}
}

// LoadCAFile reads a PEM file of CA certificates into a pool: those a peer's certificate
// must chain to.
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}
