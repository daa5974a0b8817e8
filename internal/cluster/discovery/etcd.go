package discovery

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ndbench/ndbench/driver"
)

// etcdSource finds members under a key prefix in etcd and registers nodes there. Its
// client is made on first use (connecting with credentials authenticates, which is I/O)
// and closed by Close.
type etcdSource struct {
	endpoints []string // without credentials
	user      string
	password  string
	shown     string // the spec as String shows it
	opts      Options

	mu      sync.Mutex
	client  *clientv3.Client
	closed  bool
	stopped context.Context // ends at Close
	stop    context.CancelFunc
	running sync.WaitGroup // Register's keep-alive goroutines
}

// errClosed is what an etcd discoverer answers after Close.
var errClosed = errors.New("discovery closed")

// newEtcd parses a comma-separated list of endpoints: host:port or
// http(s)://[user:password@]host:port. Endpoints carrying credentials must agree on them.
func newEtcd(target string, opts Options) (*etcdSource, error) {
	e := &etcdSource{opts: opts}
	e.stopped, e.stop = context.WithCancel(context.Background())
	var shown []string
	for i, item := range strings.Split(target, ",") {
		item = strings.TrimSpace(item)
		show := showEtcdEndpoint(item)
		ep, user, pass, err := parseEndpoint(item)
		if err != nil {
			return nil, fmt.Errorf("etcd endpoint %d %q: %v", i+1, show, err)
		}
		if user != "" || pass != "" {
			if e.user == "" && e.password == "" {
				e.user, e.password = user, pass
			} else if user != e.user || pass != e.password {
				return nil, fmt.Errorf("etcd endpoint %d %q: its credentials differ from an earlier endpoint's; one etcd cluster has one login", i+1, show)
			}
		}
		e.endpoints = append(e.endpoints, ep)
		shown = append(shown, show)
	}
	isTLS := func(ep string) bool { return strings.HasPrefix(ep, "https://") }
	for i, ep := range e.endpoints {
		if isTLS(ep) != isTLS(e.endpoints[0]) {
			// The etcd client picks TLS or not from the first endpoint for all of them.
			return nil, fmt.Errorf("etcd endpoint %d %q: mixes https and plain endpoints; use one kind", i+1, shown[i])
		}
	}
	if opts.EtcdUser != "" || opts.EtcdPassword != "" {
		if (opts.EtcdUser == "") != (opts.EtcdPassword == "") {
			return nil, errors.New("etcd credentials need both a user (--config-etcd-user) and a password ($NDBENCH_ETCD_PASSWORD)")
		}
		if e.user != "" && (e.user != opts.EtcdUser || e.password != opts.EtcdPassword) {
			return nil, errors.New("etcd credentials given twice and different: in the endpoints and by --config-etcd-user with $NDBENCH_ETCD_PASSWORD; give them once")
		}
		e.user, e.password = opts.EtcdUser, opts.EtcdPassword
	}
	if (e.user == "") != (e.password == "") {
		return nil, errors.New("etcd credentials need both a user and a password (http://user:password@host:port)")
	}
	e.shown = "etcd:" + strings.Join(shown, ",") + " " + opts.EtcdPrefix
	var access []string
	if opts.EtcdTLS != nil || isTLS(e.endpoints[0]) {
		access = append(access, "TLS")
	}
	if e.user != "" {
		access = append(access, "user "+e.user)
	}
	if len(access) > 0 {
		e.shown += " (" + strings.Join(access, ", ") + ")"
	}
	return e, nil
}

// showEtcdTarget is a comma-separated list of etcd endpoints as errors and logs show it.
func showEtcdTarget(target string) string {
	items := strings.Split(target, ",")
	for i, item := range items {
		items[i] = showEtcdEndpoint(item)
	}
	return strings.Join(items, ",")
}

// showEtcdEndpoint is an endpoint with whatever precedes its host masked but the user:
// everything before the last '@' may be a credential, also when it is mistyped (no
// colon between user and password, a scheme misspelled), and only a user before a
// colon is shown.
func showEtcdEndpoint(item string) string {
	at := strings.LastIndex(item, "@")
	if at < 0 {
		return driver.Shown(false, item)
	}
	prefix, userinfo := "", item[:at]
	if i := strings.Index(userinfo, "://"); i >= 0 {
		prefix, userinfo = userinfo[:i+3], userinfo[i+3:]
	}
	user, _, ok := strings.Cut(userinfo, ":")
	if ok && user != "" {
		user += ":"
	} else {
		user = ""
	}
	return prefix + user + driver.CredentialMask + "@" + item[at+1:]
}

// parseEndpoint splits an endpoint into what the etcd client dials and its credentials.
// Error messages never contain the password.
func parseEndpoint(item string) (endpoint, user, password string, err error) {
	if item == "" {
		return "", "", "", errors.New("empty endpoint")
	}
	if scheme, _, ok := strings.Cut(item, "://"); ok {
		if scheme != "http" && scheme != "https" {
			return "", "", "", fmt.Errorf("scheme %q: want http or https", scheme)
		}
		u, perr := url.Parse(item)
		if perr != nil {
			// url.Parse quotes the whole URL, password included: say only what is wrong.
			return "", "", "", errors.New("not a valid URL (percent-encode special characters in the password)")
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
			return "", "", "", errors.New("want scheme://[user:password@]host:port with no path or query")
		}
		if u.User != nil {
			user = u.User.Username()
			password, _ = u.User.Password()
		}
		if err := checkAddr(u.Host); err != nil {
			return "", "", "", err
		}
		return scheme + "://" + u.Host, user, password, nil
	}
	host := item
	if at := strings.LastIndex(item, "@"); at >= 0 {
		userinfo := item[:at]
		host = item[at+1:]
		var ok bool
		user, password, ok = strings.Cut(userinfo, ":")
		if !ok {
			return "", "", "", errors.New("credentials without a password; want user:password@host:port")
		}
		if user, err = url.PathUnescape(user); err != nil {
			return "", "", "", errors.New("user is not validly percent-encoded")
		}
		if password, err = url.PathUnescape(password); err != nil {
			return "", "", "", errors.New("password is not validly percent-encoded")
		}
	}
	if err := checkAddr(host); err != nil {
		return "", "", "", err
	}
	return host, user, password, nil
}

// String returns etcd:ENDPOINTS PREFIX, passwords masked.
func (e *etcdSource) String() string { return e.shown }

// Close stops the keep-alives of Register, waits for them and closes the client.
// Registrations whose context has ended are revoked first; the others are not: their keys
// expire after the TTL, as when a node dies. End Register's context before Close for a
// clean leave.
func (e *etcdSource) Close() error {
	e.mu.Lock()
	e.closed = true
	e.stop()
	e.mu.Unlock()
	e.running.Wait()
	e.mu.Lock()
	c := e.client
	e.client = nil
	e.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	return nil
}

// EtcdKeepAliveTime and EtcdKeepAliveTimeout are the etcd client's gRPC keepalive: a
// connection that received nothing for EtcdKeepAliveTime is pinged, and dropped when the
// ping is not answered within EtcdKeepAliveTimeout, so a silently cut etcd fails the
// calls waiting on it within their sum (15 s). gRPC pings no more often than every 10 s,
// and etcd refuses clients that ping more often than its --grpc-keepalive-min-time (5 s).
const (
	EtcdKeepAliveTime    = 10 * time.Second
	EtcdKeepAliveTimeout = 5 * time.Second
)

// getClient returns the client, making it on first use.
func (e *etcdSource) getClient() (*clientv3.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	if e.client != nil {
		return e.client, nil
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   e.endpoints,
		Username:    e.user,
		Password:    e.password,
		DialTimeout: e.opts.EtcdDialTimeout,
		TLS:         e.tlsConfig(),
		// A link cut silently (a partition that drops packets, no reset) is otherwise
		// only noticed when a call's own deadline ends, and a watch or a lease's
		// keep-alive stream would wait on it for good: gRPC pings a connection idle for
		// EtcdKeepAliveTime and drops it when no answer comes within
		// EtcdKeepAliveTimeout, failing the calls on it.
		DialKeepAliveTime:    EtcdKeepAliveTime,
		DialKeepAliveTimeout: EtcdKeepAliveTimeout,
		// The client logs every reconnect attempt; errors reach the caller instead.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", e, err)
	}
	e.client = c
	return c, nil
}

// tlsConfig is the etcd client's TLS configuration: Options.EtcdTLS, else the system's
// CAs for https:// endpoints, else none. The etcd client strips a scheme it is not told
// to secure, so https:// alone would otherwise dial in clear text.
func (e *etcdSource) tlsConfig() *tls.Config {
	if e.opts.EtcdTLS != nil {
		c := e.opts.EtcdTLS.Clone()
		if c.MinVersion < tls.VersionTLS12 {
			c.MinVersion = tls.VersionTLS12
		}
		return c
	}
	if strings.HasPrefix(e.endpoints[0], "https://") {
		return &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return nil
}

// Members returns the members registered under the prefix. A key whose value is not a
// member is an error naming the key: a fleet that silently lost a node would run short.
// While etcd is unreachable it waits for it until ctx ends: give ctx a deadline.
func (e *etcdSource) Members(ctx context.Context) ([]Member, error) {
	c, err := e.getClient()
	if err != nil {
		return nil, fmt.Errorf("discover members (%s): %w", e, err)
	}
	resp, err := c.Get(ctx, e.opts.EtcdPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("discover members (%s): %w", e, err)
	}
	ms := make([]Member, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		var m Member
		if err := json.Unmarshal(kv.Value, &m); err != nil {
			return nil, fmt.Errorf("discover members (%s): key %s: not a JSON member: %v", e, key, err)
		}
		m.ID = strings.TrimPrefix(key, e.opts.EtcdPrefix)
		if err := checkMember(m); err != nil {
			return nil, fmt.Errorf("discover members (%s): key %s: %v", e, key, err)
		}
		ms = append(ms, m)
	}
	return sortMembers(ms), nil
}

// checkMember checks what a member must have to be reached.
func checkMember(m Member) error {
	if m.ID == "" || strings.Contains(m.ID, "/") {
		return fmt.Errorf("member id %q: want a non-empty id without '/'", m.ID)
	}
	if err := checkAddr(m.Addr); err != nil {
		return fmt.Errorf("member %s: addr %q: %v", m.ID, driver.Shown(false, m.Addr), err)
	}
	if m.Weight < 0 || math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0) {
		return fmt.Errorf("member %s: weight %v: want a number >= 0", m.ID, m.Weight)
	}
	return nil
}

// ttlSeconds is the lease TTL in whole seconds, rounded up.
func (e *etcdSource) ttlSeconds() int64 {
	return int64(math.Ceil(e.opts.EtcdTTL.Seconds()))
}

// Register puts self under EtcdPrefix+self.ID with a lease of EtcdTTL and keeps the lease
// alive in the background until ctx ends, when it revokes the lease so the key goes at
// once. If the lease is lost (it expired while etcd was unreachable, or was revoked by
// someone else), it registers again with a new lease, retrying until ctx ends. Register
// returns once the first put succeeded, or with its error.
func (e *etcdSource) Register(ctx context.Context, self Member) error {
	if err := checkMember(self); err != nil {
		return fmt.Errorf("register in %s: %v", e, err)
	}
	value, err := json.Marshal(self)
	if err != nil {
		return fmt.Errorf("register %s in %s: %w", self.ID, e, err)
	}
	c, err := e.getClient()
	if err != nil {
		return fmt.Errorf("register %s in %s: %w", self.ID, e, err)
	}
	r := &registration{e: e, c: c, key: e.opts.EtcdPrefix + self.ID, value: string(value)}
	// Every call of the registration ends with ctx or at Close, whichever comes first;
	// ctx alone decides whether the lease is revoked.
	opCtx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(e.stopped, cancel)
	l, err := r.put(opCtx)
	if err != nil {
		unhook()
		cancel()
		return fmt.Errorf("register %s in %s: %w", self.ID, e, err)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		unhook()
		cancel()
		r.revoke(l.id)
		return fmt.Errorf("register %s in %s: %w", self.ID, e, errClosed)
	}
	e.running.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.running.Done()
		defer cancel()
		defer unhook()
		r.keep(ctx, opCtx, l)
	}()
	return nil
}

// registration is one node's key and the loop that keeps it.
type registration struct {
	e     *etcdSource
	c     *clientv3.Client
	key   string
	value string
}

// lease is one registration's lease: its keep-alive responses, and the revision its key
// was put at.
type lease struct {
	id   clientv3.LeaseID
	ka   <-chan *clientv3.LeaseKeepAliveResponse
	stop context.CancelFunc // ends the keep-alive
	rev  int64
}

// put grants a lease, puts the key with it and starts its keep-alive, which ends with
// ctx.
func (r *registration) put(ctx context.Context) (lease, error) {
	grant, err := r.c.Grant(ctx, r.e.ttlSeconds())
	if err != nil {
		return lease{}, fmt.Errorf("grant lease: %w", err)
	}
	resp, err := r.c.Put(ctx, r.key, r.value, clientv3.WithLease(grant.ID))
	if err != nil {
		r.revoke(grant.ID)
		return lease{}, fmt.Errorf("put %s: %w", r.key, err)
	}
	kaCtx, stop := context.WithCancel(ctx)
	ka, err := r.c.KeepAlive(kaCtx, grant.ID)
	if err != nil {
		stop()
		r.revoke(grant.ID)
		return lease{}, fmt.Errorf("keep lease alive: %w", err)
	}
	return lease{id: grant.ID, ka: ka, stop: stop, rev: resp.Header.Revision}, nil
}

// revoke revokes a lease, bounded by the dial timeout; failure leaves it to expire.
func (r *registration) revoke(id clientv3.LeaseID) { r.revokeWithin(context.Background(), id) }

// revokeWithin is revoke, ending with parent as well.
func (r *registration) revokeWithin(parent context.Context, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(parent, r.e.opts.EtcdDialTimeout)
	defer cancel()
	_, _ = r.c.Revoke(ctx, id)
}

// keep keeps the registration until ctx ends, when it revokes the lease, or until Close,
// when it leaves the lease to expire; opCtx ends at either. It watches the key: a key
// deleted while its lease lives (etcdctl del) is put back under the same lease. A lease
// lost (its keep-alive ended, or it expired and took the key with it) is replaced by a new
// registration, retried until it succeeds.
func (r *registration) keep(ctx, opCtx context.Context, l lease) {
	defer func() { l.stop() }()
	watch := r.c.Watch(opCtx, r.key, clientv3.WithRev(l.rev+1))
	for {
		lost := false
		select {
		case <-opCtx.Done():
			if ctx.Err() != nil {
				r.revoke(l.id)
			}
			return
		case _, ok := <-l.ka:
			lost = !ok
		case wr, ok := <-watch:
			switch {
			case opCtx.Err() != nil:
				continue
			case !ok || wr.Err() != nil:
				// The watch ended (its revision compacted, say): watch again from now,
				// and check that the key is still there.
				watch = r.c.Watch(opCtx, r.key)
				if resp, err := r.c.Get(opCtx, r.key); err == nil && len(resp.Kvs) == 0 {
					lost = !r.putBack(opCtx, l)
				}
			case deleted(wr):
				lost = !r.putBack(opCtx, l)
			}
		}
		if !lost || opCtx.Err() != nil {
			continue
		}
		// The lease is gone, or cannot be used: register again with a new one.
		l.stop()
		r.revokeWithin(opCtx, l.id) // in case it lives on: nothing should keep it alive unused
		l = r.register(opCtx)
		if opCtx.Err() != nil {
			return
		}
		watch = r.c.Watch(opCtx, r.key, clientv3.WithRev(l.rev+1))
	}
}

// putBack puts the key again under l after someone deleted it; false when that failed
// (the lease expired, which deletes the key too).
func (r *registration) putBack(ctx context.Context, l lease) bool {
	_, err := r.c.Put(ctx, r.key, r.value, clientv3.WithLease(l.id))
	return err == nil
}

// register registers with a new lease, retrying with backoff until it succeeds or ctx
// ends (then the lease returned is the zero lease, with a no-op stop).
func (r *registration) register(ctx context.Context) lease {
	retry := 100 * time.Millisecond
	for {
		l, err := r.put(ctx)
		if err == nil {
			return l
		}
		select {
		case <-ctx.Done():
			return lease{stop: func() {}}
		case <-time.After(retry):
		}
		retry = min(2*retry, r.e.opts.EtcdTTL/2+time.Second)
	}
}

// deleted reports whether a watch response deletes the key.
func deleted(wr clientv3.WatchResponse) bool {
	for _, ev := range wr.Events {
		if ev.Type == clientv3.EventTypeDelete {
			return true
		}
	}
	return false
}
