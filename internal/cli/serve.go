package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/history"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/web"
)

type serveFlags struct {
	configSources
	listen       string
	token        string
	tokenFile    string
	corsOrigins  []string
	start        bool
	backfill     bool
	etcd         string
	etcdPrefix   string
	outputs      outputFlags
	hdrLog       string
	noWatchFile  bool
	logLevelText string
	fleet        fleetFlags
	otlp         otlpFlags
	allow        []string
	allowTargets []string
	record       recordFlags
	threads      threadsFlag
	tlsCert      string
	tlsKey       string
	tlsClientCA  string
	insecure     bool // --insecure-listen
	etcdAccess   etcdAccessFlags
}

func newServeCmd(s *streams) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run as a service: REST API, live stats, Prometheus metrics",
		Long: `Run ndbench as a long-lived service controlled over HTTP: connect a driver, backfill,
start and stop reads and writes, change any parameter while it runs, and watch live
statistics (Server-Sent Events) and Prometheus metrics. The API is described at
/openapi.json and /docs.

It listens on 127.0.0.1 unless given a token (--token or NDBENCH_TOKEN) and a TLS
certificate (--tls-cert, --tls-key): any other address without them is refused
(--insecure-listen serves plain HTTP there, behind a proxy that terminates TLS). With --driver and --start it connects and starts the load
at once, as a headless service. With --config the file is watched and edits apply live;
with --config-etcd the keys under --config-prefix do too. On SIGTERM or Ctrl-C it stops
the load, prints the summary of the driver session still open (as run does), writes
--report if asked, and exits 0.

What the command line, its files, the environment and etcd set is trusted. API and UI
callers (and a fleet coordinator) are not: they cannot set a script, a file or directory
path, or an HTTP/gRPC target outside the allow-list (the targets the trusted configuration
names, and --allow-targets) unless --allow names the capability.`,
		Example: `  ndbench serve
  ndbench serve --driver memory --start --set workload.readRate=5000
  NDBENCH_TOKEN=$(openssl rand -base64 24) ndbench serve --listen 0.0.0.0:8443 --tls-cert tls.crt --tls-key tls.key --cors-origin https://ui.example.com
  ndbench serve --allow=script,paths --allow-targets api.internal:8443
  ndbench serve -c ndbench.yaml --config-etcd 10.0.0.5:2379 --config-prefix /ndbench/node1/ --report final.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --backfill is workload.backfill: the run sequence reads it there, and the
			// effective config and the report name the flag as its source.
			if cmd.Flags().Changed("backfill") {
				f.flagSets = append(f.flagSets, flagSet{"backfill", "workload.backfill", fmt.Sprint(f.backfill)})
			}
			return serve(cmd.Context(), f, s)
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&f.listen, "listen", api.DefaultListen, "address to listen on (host:port); other than loopback needs a token and --tls-cert (or --insecure-listen)")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer token required on every route but /health (default $NDBENCH_TOKEN)")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "file holding the token (its first line), re-read when it changes and on SIGHUP; the previous token stays valid for 30s")
	cmd.Flags().StringArrayVar(&f.corsOrigins, "cors-origin", nil, "origin allowed to call the API from a browser, e.g. https://ui.example.com (repeatable)")
	cmd.Flags().BoolVar(&f.start, "start", false, "initialize the configured driver and start reads and writes at once")
	cmd.Flags().BoolVar(&f.backfill, "backfill", false, "with --start, write every key once before the load (same as --set workload.backfill=true)")
	cmd.Flags().StringVar(&f.etcd, "config-etcd", "", "comma-separated etcd endpoints to read live configuration from")
	cmd.Flags().StringVar(&f.etcdPrefix, "config-prefix", "", "etcd key prefix of this node's configuration, e.g. /ndbench/node1/")
	f.etcdAccess.bind(cmd.Flags(), "--config-etcd, --discovery etcd:")
	f.outputs.bind(cmd, outputHelp{
		report:     "on shutdown, write the JSON report of the whole service run to this file",
		reportHTML: "on shutdown, write the HTML report of the whole service run to this file",
	})
	cmd.Flags().StringVar(&f.hdrLog, "hdr-log", "", "write HdrHistogram interval logs of every second the node measures to this file (as run --hdr-log), each interval as it closes")
	cmd.Flags().BoolVar(&f.noWatchFile, "no-watch", false, "do not apply edits of the --config file while running")
	cmd.Flags().StringVar(&f.logLevelText, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringSliceVar(&f.allow, "allow", nil, "let API and UI callers set what reaches beyond the store: script (script sources), http-targets (HTTP/gRPC targets on any host), paths (files and directories); comma-separated")
	cmd.Flags().StringSliceVar(&f.allowTargets, "allow-targets", nil, "hosts (host:port, or host for any port) API callers may point the http and grpc drivers at, besides those the command line names")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "serve the API over TLS with this certificate (PEM, the chain after it), re-read when it changes and on SIGHUP; with --tls-key")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	cmd.Flags().StringVar(&f.tlsClientCA, "tls-client-ca", "", "mutual TLS: answer only clients presenting a certificate of these CAs (PEM), /health excepted; a fleet's coordinator presents --peer-cert")
	cmd.Flags().BoolVar(&f.insecure, "insecure-listen", false, "serve plain HTTP off loopback (the token crosses the network in clear text): only behind a proxy that terminates TLS, or on a trusted network")
	f.fleet.bind(cmd)
	f.otlp.bind(cmd)
	f.record.bind(cmd)
	f.threads.bind(cmd)
	return cmd
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func serve(ctx context.Context, f *serveFlags, io *streams) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevelText)); err != nil {
		return usageError{fmt.Errorf("--log-level: invalid value %q; allowed: debug, info, warn, error", f.logLevelText)}
	}
	if (f.etcd == "") != (f.etcdPrefix == "") {
		return usageError{errors.New("--config-etcd and --config-prefix go together")}
	}
	etcdAccess, etcdCerts, err := f.etcdAccess.access(io.env, f.etcd != "" || strings.HasPrefix(f.fleet.discovery, "etcd:"), "--config-etcd or --discovery etcd:ENDPOINTS")
	if err != nil {
		return usageError{err}
	}
	token := f.token
	if token == "" {
		token = envValue(io.env, "NDBENCH_TOKEN")
	}
	if err := api.CheckToken(token); err != nil {
		return usageError{fmt.Errorf("--token or NDBENCH_TOKEN: %w", err)}
	}
	if f.tokenFile != "" {
		if token != "" {
			return usageError{errors.New("--token-file and --token (or NDBENCH_TOKEN) are alternatives: give one")}
		}
		t, err := api.ReadTokenFile(f.tokenFile)
		if err != nil {
			return usageError{fmt.Errorf("--token-file: %w", err)}
		}
		token = t
	}
	var certs *api.CertFiles
	if f.tlsCert != "" || f.tlsKey != "" {
		if certs, err = api.LoadCertFiles(f.tlsCert, f.tlsKey); err != nil {
			return usageError{err}
		}
	}
	var clientCAs *x509.CertPool
	if f.tlsClientCA != "" {
		if certs == nil {
			return usageError{errors.New("--tls-client-ca asks clients for certificates over TLS: give --tls-cert and --tls-key with it")}
		}
		if clientCAs, err = api.LoadCAFile(f.tlsClientCA); err != nil {
			return usageError{fmt.Errorf("--tls-client-ca: %w", err)}
		}
	}
	if err := api.CheckListen(f.listen, token, certs != nil, f.insecure); err != nil {
		return usageError{err}
	}
	allow, err := config.ParseAllow(f.allow, f.allowTargets)
	if err != nil {
		return usageError{err}
	}
	outs, err := f.outputs.resolve()
	if err != nil {
		return err
	}
	if err := checkOutputs(io.err, append(f.inputs(), discoveryInput(f.fleet.discovery)), append(outs, output{"hdr-log", f.hdrLog})...); err != nil {
		return err
	}
	if err := f.record.check(); err != nil {
		return err
	}
	self, err := f.fleet.self(f.listen)
	if err != nil {
		return usageError{err}
	}
	otlpCfg, otlpOn, err := f.otlp.config(io.env, self.ID)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: level}))
	if certs == nil && f.insecure && !api.IsLoopbackListen(f.listen) {
		log.Warn("INSECURE: serving plain HTTP off loopback (--insecure-listen): the token and every answer cross the network in clear text; "+
			"use it only behind a proxy that terminates TLS or on a network you trust, else give --tls-cert and --tls-key", "listen", f.listen)
	}

	snap, err := f.load(io.env)
	if err != nil {
		return err
	}
	// Chosen for the driver the service starts with: GOMAXPROCS is the process's, and a
	// driver connected later through the API does not move it.
	threads, err := applyThreads(io, f.threads, snap.Config.DriverOptions)
	if err != nil {
		return err
	}
	for _, n := range snap.Notices {
		log.Info("config notice", "notice", n)
	}
	if threads != "" {
		log.Info(threads)
	}
	store := config.NewStore(snap)
	store.SetAllow(allow)
	inst := node.New(store, log)
	closed := false
	defer func() {
		if !closed {
			_ = inst.Close()
		}
	}()
	if f.hdrLog != "" {
		file, err := os.Create(f.hdrLog)
		if err != nil {
			return fmt.Errorf("create HDR log: %w", err)
		}
		defer file.Close()
		hdr, err := stats.NewHDRLogWriter(file, time.Now())
		if err != nil {
			return fmt.Errorf("write HDR log %s: %w", f.hdrLog, err)
		}
		defer inst.Collector().Subscribe(hdr.Subscriber())()
	}

	var otlp *otlpExport
	if otlpOn {
		if otlp, err = startOTLP(ctx, otlpCfg, inst, log); err != nil {
			return err
		}
		// Stopped after the final report's last interval when there is one; deferred
		// calls run last first, so this one before the instance closes.
		defer stopOTLP(otlp, log)
	}

	// The results store: the History routes read it, and each driver session that ends
	// (through the API, or at exit) is recorded in it when recording is on.
	recordOn := f.record.on(io.env)
	hist := historySource(&f.record, io.env)
	var recording sync.WaitGroup
	if hist != nil {
		defer hist.close()
		defer recording.Wait() // before the store closes
	}
	onSessionEnd := func(kind string) func(*report.Report, *stats.Collector) {
		if !recordOn || hist == nil {
			return nil
		}
		return func(rep *report.Report, coll *stats.Collector) {
			if !ranLoad(rep) {
				return
			}
			// The histograms are encoded now, before a next session resets the collector;
			// the API's answer does not wait for the store, the exit does.
			hists, err := histograms(coll, rep)
			if err != nil {
				fmt.Fprintf(io.err, "WARNING: the %s was not recorded in the results history: %v\n", kindNoun(kind), err)
				return
			}
			recording.Go(func() { hist.record(ctx, io.out, io.err, kind, "", f.record.parsed, rep, rep, hists) })
		}
	}
	hooks := historyHooks{onSessionEnd: onSessionEnd}
	if hist != nil {
		hooks.source, hooks.name = hist.source(), history.Display(hist.target)
	}

	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	onSourceErr := func(err error) {
		log.Warn("configuration change rejected", "err", err)
		inst.RecordError(err)
	}
	var sources []func(context.Context) error
	var sourceStatus []func() source.Status // for GET /api/v1/status
	if f.etcd != "" {
		es, err := source.OpenEtcd(ctx, store, source.EtcdOptions{
			Endpoints: strings.Split(f.etcd, ","), Prefix: f.etcdPrefix, Access: etcdAccess, OnError: onSourceErr})
		if err != nil {
			return err
		}
		sources = append(sources, es.Run)
		sourceStatus = append(sourceStatus, es.Status)
	}
	if f.file != "" && !f.noWatchFile {
		fs, err := source.OpenFile(store, f.file, onSourceErr)
		if err != nil {
			return err
		}
		sources = append(sources, fs.Run)
		sourceStatus = append(sourceStatus, fs.Status)
	}
	for _, run := range sources {
		go func() {
			if err := run(srcCtx); err != nil {
				log.Error("configuration source stopped", "err", err)
			}
		}()
	}

	agent, err := f.fleet.agent(inst, f.listen, log)
	if err != nil {
		return usageError{err}
	}
	go agent.Run(ctx)
	if etcdCerts != nil {
		go etcdCerts.Watch(srcCtx, 0, log)
	}
	fleetSrv, err := f.fleet.coordinator(ctx, store.Current(), allow, f.listen, token, f.etcd, etcdAccess, certs, log, hooks)
	if err != nil {
		return err
	}
	// What the serve before this one on the same address lost, if it did not stop
	// cleanly; said once this one listens (a live serve there keeps it from listening).
	statePath := serveStatePath(io.env, f.listen)
	prev, err := readPreviousServe(statePath)
	if err != nil {
		log.Warn("serve cannot tell whether the previous serve stopped cleanly", "err", err)
	}
	opts := api.Options{Instance: inst, Token: token, PreviousServe: prev, CORSOrigins: f.corsOrigins, Logger: log, Version: toolVersion(),
		UI: web.Handler(web.Options{Version: toolVersion()}), Agent: agent,
		History: hooks.source, HistoryName: hooks.name, OnSessionEnd: onSessionEnd("serve"), Certs: certs, ClientCAs: clientCAs}
	if len(sourceStatus) > 0 {
		opts.ConfigSources = func() []source.Status {
			out := make([]source.Status, len(sourceStatus))
			for i, st := range sourceStatus {
				out[i] = st()
			}
			return out
		}
	}
	if fleetSrv != nil {
		defer fleetSrv.Close()
		opts.Fleet, opts.Discovery = fleetSrv.handler, fleetSrv.disc
		// The coordinator's calls to its nodes follow --token-file like the API does.
		opts.TokenChanged = func(tok string) { _ = fleetSrv.coord.SetToken(tok) }
	}
	srv, err := api.New(opts)
	if err != nil {
		return usageError{err}
	}
	defer srv.Close()
	if f.tokenFile != "" {
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go srv.WatchTokenFile(watchCtx, f.tokenFile, 0)
	}
	if certs != nil {
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go certs.Watch(watchCtx, 0, log)
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}
	if prev != nil {
		log.Warn("serve restarted after an unclean stop: " + prev.Message)
	}
	endState := keepServeState(ctx, statePath, f.listen, inst, log)
	defer func() {
		// A panic here runs this like a normal return would: the state note must then
		// say so and stay, for the next serve to report. The stack is printed before the
		// panic goes on, since the re-panic's trace starts here.
		r := recover()
		endState(r)
		if r != nil {
			fmt.Fprintf(io.err, "panic: %v\n\n%s\n", r, debug.Stack())
			panic(r)
		}
	}()
	// The service's run is the node's one run sequence, driven in the background: a
	// backfill, when configured, then the load with its warm-up, while the API serves.
	seq := &node.Run{Node: inst, Pin: true, Log: log}
	if f.start {
		name := store.Current().Config.DriverName
		if _, ok := driver.Lookup(name); !ok {
			_ = ln.Close()
			return driver.UnknownDriverError(name)
		}
		err := seq.Connect(ctx)
		if err == nil {
			err = seq.Serve(ctx)
		}
		if err != nil {
			_ = ln.Close()
			return err
		}
	}
	scheme := "http"
	if certs != nil {
		scheme = "https"
	}
	fmt.Fprintf(io.out, "ndbench %s serving on %s://%s (API docs at /docs)\n", toolVersion(), scheme, ln.Addr())

	serveErr := srv.Serve(ctx, ln) // returns when ctx ends (signal) or the listener fails
	// A driver session still open at exit ends here: it is summarized, reported and
	// recorded, as run's is.
	open := inst.Status().Driver != ""
	recordLast := recordOn && open
	if !open {
		printServeEnd(io.out, serveErr, "no driver session was open, so there is nothing to summarize")
		return serveErr
	}
	// The final report: stop the load, let operations in flight finish, close the last
	// interval, and report like `ndbench run` does, while the driver can still say what it
	// is connected to.
	_ = seq.End()
	rep := report.Build(seq.ReportInput(toolVersion()))
	stopOTLP(otlp, log)
	closed = true
	_ = inst.Close()
	werr := f.outputs.write(io.out, contents{report: jsonReport(rep), reportHTML: htmlReport(rep)})
	if record := onSessionEnd("serve"); recordLast && record != nil {
		record(rep, inst.Collector()) // after the report files, which a failure here never costs
	}
	if werr != nil {
		return errors.Join(serveErr, werr)
	}
	printSummary(io.out, rep, consoleWidth)
	printServeEnd(io.out, serveErr, fmt.Sprintf("the driver session (%s) is summarized above", rep.Driver.Name))
	return serveErr
}

// printServeEnd says that serve is ending and with what exit code: a signal is how a
// service ends (0), a listener that failed is an error.
func printServeEnd(out io.Writer, serveErr error, what string) {
	if serveErr != nil {
		fmt.Fprintf(out, "serve stopped: %s (the error follows)\n", what)
		return
	}
	fmt.Fprintf(out, "serve stopped by a signal: %s; exit code 0\n", what)
}

// stopOTLP sends the exporter's last data and logs what it did, at warn if exports
// failed; nothing for a nil or stopped exporter.
func stopOTLP(o *otlpExport, log *slog.Logger) {
	msg, failed := o.stop()
	if msg == "" {
		return
	}
	level := slog.LevelInfo
	if failed {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, msg)
}
