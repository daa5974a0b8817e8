// Package discovery finds the ndbench nodes of a fleet: the members a coordinator fans
// commands out to and splits a fleet rate over. One small interface, Discoverer, hides
// where membership comes from; Parse builds one from the --discovery flag.
//
// # Specs
//
//	static:HOST:PORT,HOST:PORT,...
//	    A fixed list (what --peers a,b maps to). Each address is host:port with a port in
//	    1..65535, or a bare host, which gets Options.DefaultPort. Member ID = Addr = host:port.
//
//	dns:NAME  or  dns:NAME:PORT
//	    First the SRV records of NAME: what a Kubernetes headless Service publishes for a
//	    named port (_http._tcp.ndbench.default.svc.cluster.local). Each SRV target is one
//	    member: ID is the target without its trailing dot, Addr is the target's address
//	    (resolved through the same DNS server; an IPv4 address is preferred) with the SRV
//	    port. If NAME has no SRV records (the name does not exist, or has none of that type),
//	    the A/AAAA records of NAME are used instead, each address one member on PORT (or
//	    Options.DefaultPort): ID = Addr = ip:port. PORT is only used on that fallback.
//	    Options.DNSServer sends every query to that server instead of the system's
//	    resolvers (the search domains of /etc/resolv.conf still apply to relative names).
//
//	etcd:ENDPOINT,ENDPOINT,...
//	    Endpoints are host:port or http(s)://[user:password@]host:port. Members are the
//	    live keys under Options.EtcdPrefix, each a JSON Member. The etcd discoverer is
//	    also a Registrar: a node announces itself with Register, under EtcdPrefix+ID with
//	    a lease of Options.EtcdTTL kept alive until Register's context ends, when the lease
//	    is revoked (the key goes at once). A node that dies stops the keep-alive and its key
//	    expires after the TTL. A lost lease is replaced and a deleted key put back while
//	    the registration lasts.
//
//	file:PATH
//	    NDBench's clusters.json: a JSON object mapping a cluster name to its nodes'
//	    "host:port" endpoints, comments allowed (see readClusters). The file is read again
//	    on every Members call. Member ID = Addr = host:port; Cluster = the cluster's name.
//
// Errors name the flag, --discovery, and list what is allowed. Passwords in specs never
// appear in errors or in String(): they are shown as driver.Shown shows them.
//
// Every Discoverer that Parse returns also implements io.Closer; only the etcd one holds
// resources (its client), but callers close whatever they get.
package discovery
