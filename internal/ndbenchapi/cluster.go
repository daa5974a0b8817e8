package ndbenchapi

import (
	"context"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/cluster/discovery"
)

// clusterTimeout bounds one discovery lookup made for a cluster route.
const clusterTimeout = 10 * time.Second

// clusters returns the hosts (host:port) of every cluster: from discovery, or this node
// alone under the default cluster name.
func (a *api) clusters(r *http.Request) (map[string][]string, error) {
	if a.discovery == nil {
		return map[string][]string{a.clusterName: {selfAddr(r)}}, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), clusterTimeout)
	defer cancel()
	byName, err := discovery.Clusters(ctx, a.discovery, a.clusterName)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(byName))
	for name, ms := range byName {
		hosts := make([]string, 0, len(ms))
		for _, m := range ms {
			hosts = append(hosts, m.Addr)
		}
		out[name] = hosts
	}
	return out, nil
}

// clusterList serves cluster/list (NDBenchClusterResource.getApps): a JSON array of the
// cluster names, sorted.
func (a *api) clusterList(w http.ResponseWriter, r *http.Request, _ string) {
	cs, err := a.clusters(r)
	if err != nil {
		writeResult(w, http.StatusInternalServerError, false, "get cluster/list failed! "+oneLine(err))
		return
	}
	writeJSON(w, http.StatusOK, slices.Sorted(maps.Keys(cs)))
}

// clusterHosts serves cluster/{appname}/list (NDBenchClusterResource.getApps(appname)):
// a JSON array of the cluster's nodes as host:port, in member order.
func (a *api) clusterHosts(w http.ResponseWriter, r *http.Request, rest string) {
	name, ok := strings.CutSuffix(strings.TrimSuffix(rest, "/"), "/list")
	if !ok || name == "" {
		writeResult(w, http.StatusNotFound, false, "no NDBench route "+r.URL.Path+"; want "+Prefix+"cluster/{appname}/list")
		return
	}
	cs, err := a.clusters(r)
	if err != nil {
		writeResult(w, http.StatusInternalServerError, false, "get cluster host list failed! "+oneLine(err))
		return
	}
	hosts, ok := cs[name]
	if !ok {
		// NDBench answers an unknown cluster with no body at all; a message is more use.
		writeResult(w, http.StatusNotFound, false, "get cluster host list failed! no cluster "+strconv.Quote(name)+
			"; clusters: "+strings.Join(slices.Sorted(maps.Keys(cs)), ", "))
		return
	}
	writeJSON(w, http.StatusOK, hosts)
}

// selfAddr is this node's address as the client reached it: the request's Host with a
// port (the scheme's default port when it has none), as NDBench answers with its own host
// and server port.
func selfAddr(r *http.Request) string {
	if r.Host != "" {
		if _, _, err := net.SplitHostPort(r.Host); err == nil {
			return r.Host
		}
		port := "80"
		if r.TLS != nil {
			port = "443"
		}
		return net.JoinHostPort(strings.Trim(r.Host, "[]"), port)
	}
	// HTTP/1.0 without Host: the address the request came in on.
	addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if addr == nil {
		return ""
	}
	return addr.String()
}
