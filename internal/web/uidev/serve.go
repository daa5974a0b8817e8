package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// splitHandler sends the page and its assets to the UI and everything else to the API.
type splitHandler struct{ ui, api http.Handler }

func (s *splitHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/") {
		s.ui.ServeHTTP(w, r)
		return
	}
	s.api.ServeHTTP(w, r)
}

func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
