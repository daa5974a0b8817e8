// Command kvhttpd is a small key-value HTTP service for the integration tests of the http
// driver, run by internal/testserver as a separate process (so that killing or pausing it
// is a real outage, as for the other stores):
//
//	GET    /kv/{key}    200 and the value, 404 when absent
//	PUT    /kv/{key}    stores the body (POST too); 201 when new, 204 when replaced
//	DELETE /kv/{key}    204, or 404 when absent
//	GET    /json/{key}  {"key": KEY, "value": BASE64, "size": N}, 404 when absent
//	GET    /health      200 ok
//
// A request carrying X-Ndbench-Status: CODE gets that status and no other effect, and
// X-Ndbench-Delay: DURATION waits first (bounded by the client going away), so tests can
// inject throttling, outages, rejections and slowness. It serves HTTP/1.1 and cleartext
// HTTP/2 (h2c, prior knowledge) on -addr, or HTTPS with HTTP/2 when -cert and -key are set.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// store is the data: a map under a lock is plenty for tests.
type store struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	cert := flag.String("cert", "", "PEM certificate for HTTPS")
	key := flag.String("key", "", "PEM key of -cert")
	flag.Parse()
	if err := run(*addr, *cert, *key); err != nil {
		fmt.Fprintln(os.Stderr, "kvhttpd:", err)
		os.Exit(1)
	}
}

func run(addr, cert, key string) error {
	s := &store{m: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/kv/{key}", s.kv)
	mux.HandleFunc("GET /json/{key}", s.json)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Addr: addr, Handler: inject(mux), Protocols: &p, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(os.Stderr, "kvhttpd: ", log.LstdFlags)}
	log.Printf("kvhttpd serving on %s (tls %v)", addr, cert != "")
	var err error
	if cert != "" {
		err = srv.ListenAndServeTLS(cert, key)
	} else {
		err = srv.ListenAndServe()
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// inject applies X-Ndbench-Delay and X-Ndbench-Status before the real handler.
func inject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := r.Header.Get("X-Ndbench-Delay"); d != "" {
			dur, err := time.ParseDuration(d)
			if err != nil {
				http.Error(w, "bad X-Ndbench-Delay", http.StatusBadRequest)
				return
			}
			select {
			case <-time.After(dur):
			case <-r.Context().Done():
				return
			}
		}
		if st := r.Header.Get("X-Ndbench-Status"); st != "" {
			code, err := strconv.Atoi(st)
			if err != nil || code < 200 || code > 599 {
				http.Error(w, "bad X-Ndbench-Status", http.StatusBadRequest)
				return
			}
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, "injected status", code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *store) kv(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.mu.RLock()
		v, ok := s.m[key]
		s.mu.RUnlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(v)))
		_, _ = w.Write(v)
	case http.MethodPut, http.MethodPost:
		v, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		_, existed := s.m[key]
		s.m[key] = v
		s.mu.Unlock()
		if existed {
			w.WriteHeader(http.StatusNoContent)
		} else {
			w.WriteHeader(http.StatusCreated)
		}
	case http.MethodDelete:
		s.mu.Lock()
		_, existed := s.m[key]
		delete(s.m, key)
		s.mu.Unlock()
		if !existed {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *store) json(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	s.mu.RLock()
	v, ok := s.m[key]
	s.mu.RUnlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Key   string `json:"key"`
		Value []byte `json:"value"` // base64, as encoding/json writes bytes
		Size  int    `json:"size"`
	}{key, v, len(v)})
}
