package cli

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config/source"
)

// etcdAccessFlags say how etcd is reached: over TLS (--config-etcd-ca, a client
// certificate), as a user whose password is in $NDBENCH_ETCD_PASSWORD. serve uses them for
// --config-etcd and --discovery etcd:, scenario run and autotune for --discovery etcd:;
// one definition, so every command that reaches etcd takes the same flags and says the
// same about them.
type etcdAccessFlags struct {
	ca   string
	cert string
	key  string
	user string
}

// bind defines the flags; uses names what reaches etcd in the command ("--config-etcd,
// --discovery etcd:").
func (f *etcdAccessFlags) bind(fl *pflag.FlagSet, uses string) {
	fl.StringVar(&f.ca, "config-etcd-ca", "", "reach etcd ("+uses+") over TLS, trusting the CA certificates (PEM) of this file")
	fl.StringVar(&f.cert, "config-etcd-cert", "", "reach etcd ("+uses+") over TLS with this client certificate (PEM; with --config-etcd-key), re-read when it changes")
	fl.StringVar(&f.key, "config-etcd-key", "", "the private key (PEM) of --config-etcd-cert")
	fl.StringVar(&f.user, "config-etcd-user", "", "etcd user of "+uses+"; the password comes from $NDBENCH_ETCD_PASSWORD")
}

// access is how etcd is reached, for every use of it in one command alike (one fleet,
// one etcd cluster, one login): over TLS with --config-etcd-ca (etcd's CA) or
// --config-etcd-cert/--config-etcd-key (a client certificate, returned to be watched), as
// --config-etcd-user with $NDBENCH_ETCD_PASSWORD. used says whether the command reaches
// etcd at all; give names what would make it (for the error when the flags are given
// without it). Errors never show the password.
func (f *etcdAccessFlags) access(env []string, used bool, give string) (source.EtcdAccess, *api.CertFiles, error) {
	var a source.EtcdAccess
	if f.ca != "" || f.cert != "" || f.key != "" || f.user != "" {
		if !used {
			return a, nil, fmt.Errorf("--config-etcd-ca, --config-etcd-cert, --config-etcd-key and --config-etcd-user say how to reach etcd: give %s with them", give)
		}
	}
	var certs *api.CertFiles
	if f.cert != "" || f.key != "" {
		var err error
		if certs, err = api.LoadCertFiles(f.cert, f.key); err != nil {
			return a, nil, fmt.Errorf("--config-etcd-cert and --config-etcd-key: %w", err)
		}
	}
	if f.ca != "" || certs != nil {
		a.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if f.ca != "" {
			pool, err := api.LoadCAFile(f.ca)
			if err != nil {
				return a, nil, fmt.Errorf("--config-etcd-ca: %w", err)
			}
			a.TLS.RootCAs = pool
		}
		if certs != nil {
			a.TLS.GetClientCertificate = certs.GetClientCertificate
		}
	}
	password := envValue(env, "NDBENCH_ETCD_PASSWORD")
	switch {
	case f.user != "" && password == "":
		return a, nil, errors.New("--config-etcd-user needs the password in $NDBENCH_ETCD_PASSWORD")
	case f.user == "" && password != "" && used:
		return a, nil, errors.New("$NDBENCH_ETCD_PASSWORD is set without --config-etcd-user: give the user too")
	}
	a.Username, a.Password = f.user, password
	return a, certs, nil
}

// discoveryOptions are the etcd settings of a discovery spec: where in etcd the nodes
// register (prefix), and how etcd is reached.
func discoveryOptions(prefix string, a source.EtcdAccess) discovery.Options {
	return discovery.Options{EtcdPrefix: prefix, EtcdTLS: a.TLS, EtcdUser: a.Username, EtcdPassword: a.Password}
}

// bindDiscoveryPrefix defines --discovery-prefix, which a coordinating serve and the
// commands that drive a fleet from outside (scenario run, autotune) must agree on with
// the nodes that register.
func bindDiscoveryPrefix(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "discovery-prefix", discovery.DefaultEtcdPrefix, "etcd discovery: key prefix the nodes register under")
}
