// Command uidev serves the web UI beside the API of one in-process instance, the way
// `ndbench serve` will once it mounts web.Handler. The browser tests use it while the
// serve command does not yet serve the page; it is also handy for working on the UI.
//
//	go run ./internal/web/uidev --listen 127.0.0.1:8090
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/ndbench/ndbench/drivers/all" // every driver, registered from init
	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/instance"
	"github.com/ndbench/ndbench/internal/web"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	flag.Parse()
	if err := run(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "uidev:", err)
		os.Exit(1)
	}
}

func run(listen string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	snap, err := config.Load(config.Sources{Env: os.Environ()})
	if err != nil {
		return err
	}
	inst := instance.New(config.NewStore(snap), log)
	defer inst.Close()
	srv, err := api.New(api.Options{Instance: inst, Logger: log, Version: "uidev"})
	if err != nil {
		return err
	}
	defer srv.Close()
	ui := web.Handler(web.Options{Version: "uidev"})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// The API's catch-all answers every unknown path with 404; the page and its assets
	// are routed to the UI first (what the lead's api.New change does in-process).
	h := &splitHandler{ui: ui, api: srv.Handler()}
	fmt.Printf("ndbench uidev serving on http://%s (API docs at /docs)\n", ln.Addr())
	return serveUntil(ctx, ln, h)
}
