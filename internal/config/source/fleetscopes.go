package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// FleetScopes keeps a fleet's scoped configuration in etcd, one key per value:
// PREFIX + SCOPE + "/" + KEY, e.g. /ndbench/fleet/fleet/workload.readRate or
// /ndbench/fleet/group:zone=a/workload.writeRate or /ndbench/fleet/node:10.0.0.5:8080/workload.readers.
// The coordinator writes what is changed through its API there, reads it back when it
// starts (a restarted control point, or another node taking over, finds the fleet's
// configuration), and applies what is edited in etcd directly (etcdctl put ...), as
// Archaius applies a dynamic property.
type FleetScopes struct {
	client  *clientv3.Client
	prefix  string
	timeout time.Duration
	shown   string
}

// OpenFleetScopes connects to etcd (with access: TLS, credentials); nothing is read until Load.
func OpenFleetScopes(endpoints []string, prefix string, access EtcdAccess) (*FleetScopes, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("fleet config in etcd: no endpoints")
	}
	if prefix == "" || prefix == "/" {
		return nil, errors.New("fleet config in etcd: empty key prefix (it would read every key in etcd)")
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	client, err := clientv3.New(access.clientConfig(endpoints, DefaultEtcdTimeout))
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", shownEndpoints(endpoints), err)
	}
	return &FleetScopes{client: client, prefix: prefix, timeout: DefaultEtcdTimeout, shown: "etcd " + shownEndpoints(endpoints) + " " + prefix}, nil
}

// String names the store for logs and errors, credentials masked.
func (f *FleetScopes) String() string { return f.shown }

// Close releases the client.
func (f *FleetScopes) Close() error { return f.client.Close() }

// Load returns the values under the prefix by scope, and the revision they were read at.
func (f *FleetScopes) Load(ctx context.Context) (map[string]map[string]string, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	resp, err := f.client.Get(ctx, f.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("read fleet config from %s: %w", f.shown, err)
	}
	out := map[string]map[string]string{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), f.prefix)
		// The scope is everything up to the last "/" before the key: a node id may hold
		// a colon but not a slash, and a config key never holds a slash.
		i := strings.LastIndex(rest, "/")
		if i <= 0 || i == len(rest)-1 {
			return nil, 0, fmt.Errorf("fleet config in %s: key %q is not %sSCOPE/KEY", f.shown, kv.Key, f.prefix)
		}
		scope, key := rest[:i], rest[i+1:]
		if out[scope] == nil {
			out[scope] = map[string]string{}
		}
		out[scope][key] = string(kv.Value)
	}
	return out, resp.Header.Revision, nil
}

// Save writes values at scope in one transaction.
func (f *FleetScopes) Save(ctx context.Context, scope string, values map[string]string) error {
	if strings.Contains(scope, "/") {
		return fmt.Errorf("fleet config scope %q: a scope cannot hold /", scope)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	ops := make([]clientv3.Op, 0, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		ops = append(ops, clientv3.OpPut(f.prefix+scope+"/"+k, values[k]))
	}
	if _, err := f.client.Txn(ctx).Then(ops...).Commit(); err != nil {
		return fmt.Errorf("write fleet config to %s: %w", f.shown, err)
	}
	return nil
}

// Watch calls apply with the whole configuration after every change under the prefix
// since revision rev, until ctx ends. A lost watch is resumed; what changed meanwhile is
// read whole.
func (f *FleetScopes) Watch(ctx context.Context, rev int64, apply func(map[string]map[string]string), onError func(error)) {
	for ctx.Err() == nil {
		wch := f.client.Watch(clientv3.WithRequireLeader(ctx), f.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				onError(fmt.Errorf("watch fleet config in %s: %w", f.shown, err))
				break
			}
			if len(resp.Events) == 0 {
				continue
			}
			all, r, err := f.Load(ctx)
			if err != nil {
				onError(err)
				continue
			}
			rev = r
			apply(all)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			if all, r, err := f.Load(ctx); err == nil {
				rev = r
				apply(all)
			}
		}
	}
}
