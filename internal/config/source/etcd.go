package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// DefaultEtcdTimeout bounds connecting to etcd and each read of the prefix, so a node whose
// etcd is unreachable fails at start within seconds instead of hanging.
const DefaultEtcdTimeout = 5 * time.Second

// EtcdOptions configures an Etcd.
type EtcdOptions struct {
	Endpoints []string // "127.0.0.1:2379" or "http://host:2379"
	// Prefix holds this node's keys: <Prefix>workload.readRate = "5000",
	// <Prefix>drivers.redis.ttl = "30s". It must not be empty (that would read every key).
	Prefix string
	// Timeout bounds the first connection and every read of the prefix; DefaultEtcdTimeout
	// when zero.
	Timeout time.Duration
	// Access is TLS and credentials, when etcd wants them.
	Access EtcdAccess
	// OnError (may be nil) hears about every rejected change, with the etcd key of each bad
	// value as its source ("etcd /ndbench/node1/workload.readRate"), and about failed
	// re-reads. It runs on the goroutine of Run.
	OnError func(error)
}

// EtcdAccess is how a client reaches etcd besides its endpoints: over TLS (verifying
// etcd's certificate, presenting a client certificate when etcd asks for one) and with a
// user and password when etcd has authentication on. Its String never shows the password.
type EtcdAccess struct {
	// TLS, when set, makes every connection a TLS one (endpoints may then be given
	// without a scheme, or with https://).
	TLS *tls.Config
	// Username and Password authenticate to etcd ("" = no authentication).
	Username, Password string
}

// String says how etcd is reached, without the password.
func (a EtcdAccess) String() string {
	var parts []string
	if a.TLS != nil {
		parts = append(parts, "TLS")
	}
	if a.Username != "" {
		parts = append(parts, "user "+a.Username)
	}
	if len(parts) == 0 {
		return "plain"
	}
	return strings.Join(parts, ", ")
}

// GoString keeps %#v from printing the password.
func (a EtcdAccess) GoString() string { return "source.EtcdAccess{" + a.String() + "}" }

// clientConfig is the etcd client's configuration for endpoints with this access.
func (a EtcdAccess) clientConfig(endpoints []string, timeout time.Duration) clientv3.Config {
	return clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: timeout,
		TLS:         a.TLS,
		Username:    a.Username,
		Password:    a.Password,
		// A silently cut link (no reset) would hold the watch for good: gRPC pings a
		// connection idle for 10 s and drops it when no answer comes within 5 s, and
		// the watch reconnects (the same bound as the discovery's etcd client).
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		// The client logs every reconnect attempt; ndbench reports what matters through
		// OnError and Status instead.
		Logger: zap.NewNop(),
	}
}

// Etcd keeps the etcd layer of a config.Store in step with the keys under a prefix: every
// batch of changes re-applies the whole layer, so a deleted key falls back to the file,
// environment or default value, and an invalid value leaves the last good configuration in
// effect. Connection loss is handled by the etcd client, which resumes the watch where it
// stopped.
type Etcd struct {
	store  *config.Store
	opts   EtcdOptions
	client *clientv3.Client
	state  *sourceState

	// Owned by the goroutine of Open, then of Run.
	kvs map[string]string // full key -> value: the prefix as of rev
	rev int64

	closeOnce sync.Once
	closeErr  error
}

// OpenEtcd connects to etcd, reads the prefix and applies it to store. It fails
// within opts.Timeout when etcd cannot be reached, and with driver.FieldErrors naming the
// etcd keys when the values there are invalid, so `ndbench serve` does not start on a
// configuration it was not asked to run. Run then watches for changes.
func OpenEtcd(ctx context.Context, store *config.Store, opts EtcdOptions) (*Etcd, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcd config source: no endpoints")
	}
	if opts.Prefix == "" {
		return nil, errors.New("etcd config source: empty key prefix (it would read every key in etcd)")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultEtcdTimeout
	}
	client, err := clientv3.New(opts.Access.clientConfig(opts.Endpoints, opts.Timeout))
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s (%s): %w", shownEndpoints(opts.Endpoints), opts.Access, err)
	}
	e := &Etcd{store: store, opts: opts, client: client,
		state: newSourceState("etcd "+shownEndpoints(opts.Endpoints)+" "+opts.Prefix, opts.OnError)}
	if err := e.read(ctx); err != nil {
		_ = client.Close()
		return nil, err
	}
	if err := e.apply(); err != nil {
		_ = client.Close()
		return nil, err
	}
	return e, nil
}

// WatchEtcd reads the etcd keys under prefix into store's etcd layer and keeps them in step
// until ctx ends (see OpenEtcd and Etcd.Run). It returns an error at once when
// etcd is unreachable or holds invalid values at start.
func WatchEtcd(ctx context.Context, store *config.Store, endpoints []string, prefix string, onError func(error)) error {
	e, err := OpenEtcd(ctx, store, EtcdOptions{Endpoints: endpoints, Prefix: prefix, OnError: onError})
	if err != nil {
		return err
	}
	return e.Run(ctx)
}

// Status returns what the source last did; safe to call at any time.
func (e *Etcd) Status() Status { return e.state.status() }

// Close disconnects from etcd; Run does it on return, so only a caller that never runs the
// source needs it.
func (e *Etcd) Close() error {
	e.closeOnce.Do(func() { e.closeErr = e.client.Close() })
	return e.closeErr
}

// Run watches the prefix from the revision after the last read, so no change made in
// between is lost, and applies every batch of changes, until ctx ends; then it closes the
// client and returns nil. When the watch is cancelled (the revision it needs was compacted
// away, or the member lost its cluster), it reads the prefix again and resumes from there.
func (e *Etcd) Run(ctx context.Context) error {
	defer e.Close()
	// Restarts back off unless the last watch delivered changes, so a watch that keeps
	// being cancelled, or an etcd that is down, is not hammered.
	backoff := newBackoff(100*time.Millisecond, 10*time.Second)
	for {
		wctx, cancel := context.WithCancel(ctx)
		probed := make(chan struct{})
		go func() {
			defer close(probed)
			e.probe(wctx, cancel)
		}()
		delivered := e.watch(clientv3.WithRequireLeader(wctx))
		cancel()
		<-probed
		if delivered {
			backoff.reset()
		}
		for {
			if !backoff.wait(ctx) {
				return nil
			}
			if err := e.read(ctx); err != nil {
				e.state.failed(err)
				continue
			}
			if err := e.apply(); err != nil {
				e.state.failed(err)
			}
			break
		}
	}
}

// watch applies change batches until the watch ends, for whatever reason: the caller
// re-reads the prefix in every case, so the reason does not matter here. It reports
// whether any change arrived.
func (e *Etcd) watch(ctx context.Context) (delivered bool) {
	wch := e.client.Watch(ctx, e.opts.Prefix, clientv3.WithPrefix(), clientv3.WithRev(e.rev+1))
	for wr := range wch {
		if wr.Canceled || wr.Err() != nil {
			return delivered
		}
		if len(wr.Events) == 0 {
			continue // progress notification or creation: nothing changed
		}
		delivered = true
		for _, ev := range wr.Events {
			key := string(ev.Kv.Key)
			switch ev.Type {
			case clientv3.EventTypePut:
				e.kvs[key] = string(ev.Kv.Value)
			case clientv3.EventTypeDelete:
				delete(e.kvs, key)
			}
		}
		e.rev = wr.Header.Revision
		if err := e.apply(); err != nil {
			e.state.failed(err)
		}
	}
	return delivered
}

// probe asks etcd for the prefix's key count every opts.Timeout while the watch runs.
// The client's watch reconnects by itself and says nothing while etcd is unreachable,
// so without it a node kept its configuration with a source that looked healthy: when
// etcd does not answer within opts.Timeout, probe records the failure in the status and
// calls lost, which ends the watch; Run then reads the prefix again until etcd answers,
// and the read's success clears the failure.
func (e *Etcd) probe(ctx context.Context, lost func()) {
	t := time.NewTicker(e.opts.Timeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
		_, err := e.client.Get(pctx, e.opts.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err != nil && ctx.Err() == nil {
			e.state.failed(fmt.Errorf("watch etcd prefix %s at %s (%s): no answer within %v, reconnecting; the last configuration read stays: %w",
				e.opts.Prefix, shownEndpoints(e.opts.Endpoints), e.opts.Access, e.opts.Timeout, err))
			lost()
			return
		}
	}
}

// read replaces e.kvs with the prefix as etcd holds it now.
func (e *Etcd) read(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	resp, err := e.client.Get(gctx, e.opts.Prefix, clientv3.WithPrefix())
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			// gRPC hides a failed handshake behind the deadline: say what to check.
			return fmt.Errorf("read etcd prefix %s from %s (%s): no answer within %v: check the endpoints, and that the TLS settings match etcd's "+
				"(its CA, a client certificate when it asks for one): %w", e.opts.Prefix, shownEndpoints(e.opts.Endpoints), e.opts.Access, e.opts.Timeout, err)
		}
		return fmt.Errorf("read etcd prefix %s from %s (%s): %w", e.opts.Prefix, shownEndpoints(e.opts.Endpoints), e.opts.Access, err)
	}
	e.kvs = make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		e.kvs[string(kv.Key)] = string(kv.Value)
	}
	e.rev = resp.Header.Revision
	return nil
}

// apply sets the store's etcd layer to e.kvs, each value labelled with its etcd key.
func (e *Etcd) apply() error {
	l := config.Layer{Name: config.LayerEtcd, Source: "etcd " + e.opts.Prefix, Values: map[string]string{}, Origins: map[string]string{}}
	for full, v := range e.kvs {
		key := strings.TrimPrefix(full, e.opts.Prefix)
		if key == "" {
			continue // the prefix itself, as a directory marker: not a setting
		}
		l.Values[key] = v
		l.Origins[key] = "etcd " + full
	}
	snap, err := e.store.SetLayerIfChanged(l)
	if err != nil {
		return fmt.Errorf("etcd %s at revision %d not applied, the last good configuration stays: %w", e.opts.Prefix, e.rev, err)
	}
	e.state.applied(snap, e.rev)
	return nil
}

// backoff spaces out retries against an etcd that is down, doubling up to a limit.
type backoff struct {
	first, max, next time.Duration
}

func newBackoff(first, max time.Duration) *backoff {
	return &backoff{first: first, max: max, next: first}
}

func (b *backoff) reset() { b.next = b.first }

// wait waits for the next retry; false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(2*b.next, b.max)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// shownEndpoints lists etcd endpoints for errors and the status page, without the
// password of an endpoint URL that carries one.
func shownEndpoints(endpoints []string) string {
	return driver.Shown(false, strings.Join(endpoints, ","))
}
