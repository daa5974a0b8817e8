package driver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// groupedOptions is a driver's options struct using all three groups, one of them
// adjusted the way a driver with other names and defaults would.
type groupedOptions struct {
	Addrs    []string `opt:"addrs" default:"h:1" help:"servers"`
	Auth     AuthOptions
	TLS      TLSOptions     `tlsVerify.alias:"tlsVerifyHost"`
	Timeouts TimeoutOptions `omit:"timeout" connectTimeout.default:"2s" connectTimeout.min:"1ms" connectTimeout.max:"" connectTimeout.alias:"dialTimeout" json:"-"`
	Mode     string         `opt:"mode" default:"a" enum:"a,b" help:"mode"`

	rules int // how often Validate ran
}

// Validate is the driver's own rule, beside the groups' rules.
func (o *groupedOptions) Validate() error {
	o.rules++
	if o.Mode == "b" && len(o.Addrs) > 1 {
		return FieldErrors{{Field: "mode", Value: o.Mode, Allowed: "a with several addrs"}}
	}
	return nil
}

func groupedDefaults(t *testing.T) *groupedOptions {
	t.Helper()
	o := &groupedOptions{}
	if err := ApplyDefaults(o); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestGroupsFlattenIntoTheSchema(t *testing.T) {
	schema, err := Schema(&groupedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]Option{}
	for _, o := range schema {
		names = append(names, o.Name)
		byName[o.Name] = o
	}
	want := []string{"addrs", "username", "password", "tls", "tlsCAFile", "tlsCertFile", "tlsKeyFile",
		"tlsVerify", "tlsServerName", "connectTimeout", "mode"}
	if !slices.Equal(names, want) {
		t.Fatalf("schema names %v, want %v (group options in the group's place, omitted ones left out)", names, want)
	}
	tests := []struct {
		name                      string
		typ, def, min, max, alias string
		secret                    bool
	}{
		{name: "password", typ: "string", secret: true},
		{name: "tlsVerify", typ: "bool", def: "true", alias: "tlsVerifyHost"},
		{name: "tls", typ: "bool", def: "false"},
		{name: "connectTimeout", typ: "duration", def: "2s", min: "1ms", alias: "dialTimeout"}, // max removed
	}
	for _, tt := range tests {
		o := byName[tt.name]
		if o.Type != tt.typ || o.Default != tt.def || o.Min != tt.min || o.Max != tt.max ||
			strings.Join(o.Aliases, ",") != tt.alias || o.Secret != tt.secret || o.Help == "" {
			t.Errorf("%s = %+v, want type %s default %q min %q max %q aliases %q secret %v and help",
				tt.name, o, tt.typ, tt.def, tt.min, tt.max, tt.alias, tt.secret)
		}
	}
	// The groups' own schemas are untouched by one driver's adjustments.
	own, err := Schema(TimeoutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != 2 || own[0].Default != "5s" || own[0].Max != "5m" || own[0].Aliases != nil {
		t.Fatalf("TimeoutOptions schema changed by an embedding: %+v", own)
	}
}

func TestGroupDefaultsAndSet(t *testing.T) {
	o := groupedDefaults(t)
	if !o.TLS.Verify || o.TLS.Enable || o.Timeouts.Connect != 2*time.Second || o.Timeouts.Request != 0 || o.Mode != "a" {
		t.Fatalf("defaults: %+v", o)
	}
	tests := []struct {
		name   string
		values map[string]string
		check  func(*groupedOptions) bool
		bad    []string // options named by the field errors
	}{
		{"names", map[string]string{"tls": "true", "tlsCAFile": "/ca.pem", "username": "u", "password": "pw", "connectTimeout": "3s"},
			func(o *groupedOptions) bool {
				return o.TLS.Enable && o.TLS.CAFile == "/ca.pem" && o.Auth.Username == "u" && o.Auth.Password == "pw" && o.Timeouts.Connect == 3*time.Second
			}, nil},
		{"aliases", map[string]string{"tlsVerifyHost": "false", "dialTimeout": "5ms"},
			func(o *groupedOptions) bool { return !o.TLS.Verify && o.Timeouts.Connect == 5*time.Millisecond }, nil},
		{"adjusted min", map[string]string{"dialTimeout": "0s"}, nil, []string{"connectTimeout"}},
		{"omitted option", map[string]string{"timeout": "1s"}, nil, []string{"timeout"}},
		{"bad bool", map[string]string{"tlsVerify": "maybe"}, nil, []string{"tlsVerify"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := groupedDefaults(t)
			err := Set(o, tt.values)
			if tt.bad == nil {
				if err != nil || !tt.check(o) {
					t.Fatalf("Set = %v, options %+v", err, o)
				}
				return
			}
			fes, ok := AsFieldErrors(err)
			if !ok || len(fes) != len(tt.bad) {
				t.Fatalf("Set error %v, want field errors for %v", err, tt.bad)
			}
			for i, fe := range fes {
				if fe.Field != tt.bad[i] || fe.Allowed == "" {
					t.Errorf("error %d = %+v, want field %s with what is allowed", i, fe, tt.bad[i])
				}
			}
		})
	}
	// Values and Changed see group options by name.
	a, b := groupedDefaults(t), groupedDefaults(t)
	b.TLS.Enable = true
	b.Timeouts.Connect = time.Second
	if _, restart := Changed(a, b); !slices.Equal(restart, []string{"tls", "connectTimeout"}) {
		t.Fatalf("Changed = %v, want tls and connectTimeout", restart)
	}
	if v := Values(b, true); v["tlsVerify"] != "true" || v["connectTimeout"] != "1s" {
		t.Fatalf("Values = %v", v)
	}
	// CheckTags bounds group fields filled in code.
	b.Timeouts.Connect = 0
	if fes, ok := AsFieldErrors(CheckTags(b)); !ok || fes[0].Field != "connectTimeout" {
		t.Fatalf("CheckTags of connectTimeout=0: %v", CheckTags(b))
	}
}

// TestGroupSchemaErrors: an adjustment that would be silently ignored, or a group option
// clashing with the driver's own, is a schema error, so Register fails at start-up.
func TestGroupSchemaErrors(t *testing.T) {
	tests := []struct {
		name string
		opts any
		want string
	}{
		{"misspelt option", &struct {
			T TimeoutOptions `conectTimeout.default:"1s"`
		}{}, `no option "conectTimeout"`},
		{"unknown tag", &struct {
			T TimeoutOptions `timeout.defualt:"1s"`
		}{}, "defualt cannot be adjusted"},
		{"secret is the group's", &struct {
			A AuthOptions `password.secret:"false"`
		}{}, "secret cannot be adjusted"},
		{"reach is the group's", &struct {
			G TLSOptions `tlsCAFile.reach:""`
		}{}, "reach cannot be adjusted"},
		{"unknown reach", &struct {
			F string `opt:"f" reach:"disk"`
		}{}, `"disk" is not one of path, script, target`},
		{"omit unknown", &struct {
			T TimeoutOptions `omit:"requestTimeout"`
		}{}, `no option "requestTimeout"`},
		{"bad adjusted bound", &struct {
			T TimeoutOptions `timeout.min:"1"`
		}{}, "do not parse"},
		{"clash with own option", &struct {
			TLS bool `opt:"tls"`
			G   TLSOptions
		}{}, `"tls"`},
		{"alias clash", &struct {
			Dial time.Duration  `opt:"dialTimeout"`
			G    TimeoutOptions `connectTimeout.alias:"dialTimeout"`
		}{}, `"dialTimeout"`},
		{"two groups of a kind", &struct {
			A, B AuthOptions
		}{}, `"username"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Schema(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Schema error %v, want one containing %s", err, tt.want)
			}
		})
	}
}

// TestGroupSecretsNeverShown holds the password of AuthOptions to the bar of the other
// secrets: redacted in Values, never echoed in errors (also under a mistyped name, which
// may be the secret option misspelt), and kept out of %v and %#v.
func TestGroupSecretsNeverShown(t *testing.T) {
	forgetRegistered(t, "grouped-secret")
	const secret = "hunter2-s3cret"
	o := groupedDefaults(t)
	if err := Set(o, map[string]string{"password": secret, "username": "u"}); err != nil {
		t.Fatal(err)
	}
	if v := Values(o, true); v["password"] != Redacted || v["username"] != "u" {
		t.Fatalf("redacted values = %v", v)
	}
	if v := Values(o, false); v["password"] != secret {
		t.Fatalf("unredacted password = %q", v["password"])
	}
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", *o), fmt.Sprint(o.Auth)} {
		if strings.Contains(s, secret) {
			t.Errorf("formatted options show the password: %s", s)
		}
	}
	for _, values := range []map[string]string{
		{"pasword": secret},
		{"Password": secret},
		{"auth.password": secret},
		{"password": secret, "mode": "c"}, // an error elsewhere in the same Set
		{"passwd": secret, "tlsVerify": "maybe"},
	} {
		err := Set(groupedDefaults(t), values)
		if err == nil {
			t.Fatalf("Set(%v) accepted", values)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Set(%v) echoed the secret: %v", keys(values), err)
		}
	}
	if err := Register(Definition{Name: "grouped-secret", New: func() Driver { return nil },
		NewOptions: func() any { return &groupedOptions{} }}); err != nil {
		t.Fatal(err)
	}
	_, err := NewOptions("grouped-secret", map[string]string{"pasword": secret, "tlsCertFile": "/c.pem"})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("NewOptions with a mistyped secret: %v", err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestGroupRules(t *testing.T) {
	forgetRegistered(t, "grouped-rules")
	if err := Register(Definition{Name: "grouped-rules", New: func() Driver { return nil },
		NewOptions: func() any { return &groupedOptions{} }}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		values map[string]string
		bad    []string
	}{
		{"defaults", nil, nil},
		{"cert and key", map[string]string{"tlsCertFile": "/c.pem", "tlsKeyFile": "/k.pem"}, nil},
		{"cert without key", map[string]string{"tlsCertFile": "/c.pem"}, []string{"tlsKeyFile"}},
		{"key without cert", map[string]string{"tlsKeyFile": "/k.pem"}, []string{"tlsCertFile"}},
		{"group and driver rules together", map[string]string{"tlsKeyFile": "/k.pem", "mode": "b", "addrs": "a:1,b:2"}, []string{"tlsCertFile", "mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := NewOptions("grouped-rules", tt.values)
			if tt.bad == nil {
				if err != nil {
					t.Fatal(err)
				}
				if err := Validate(opts); err != nil {
					t.Fatalf("Validate of what NewOptions built: %v", err)
				}
				if n := opts.(*groupedOptions).rules; n != 2 {
					t.Fatalf("the driver's Validate ran %d times, want once each in NewOptions and Validate", n)
				}
				return
			}
			fes, ok := AsFieldErrors(err)
			if !ok || len(fes) != len(tt.bad) {
				t.Fatalf("error %v, want field errors for %v", err, tt.bad)
			}
			for i, fe := range fes {
				if fe.Field != tt.bad[i] || !strings.Contains(fe.Allowed, "set together") && fe.Field != "mode" {
					t.Errorf("error %d = %+v, want field %s saying what is allowed", i, fe, tt.bad[i])
				}
			}
			// driver.Validate applies the same rules to options built in code.
			o := groupedDefaults(t)
			if err := Set(o, tt.values); err != nil {
				t.Fatal(err)
			}
			if fes, _ := AsFieldErrors(Validate(o)); len(fes) != len(tt.bad) {
				t.Fatalf("Validate = %v, want errors for %v", Validate(o), tt.bad)
			}
		})
	}
}

// anonGroups embeds groups anonymously. TLSOptions.Validate is promoted to it, so the
// group's rule runs as the struct's, once.
type anonGroups struct {
	TLSOptions
	TimeoutOptions
}

// shadowing declares its own Validate, which (as in Go) shadows the promoted one and is
// responsible for the group's rule.
type shadowing struct {
	TLSOptions
	calls *int
}

func (s shadowing) Validate() error { *s.calls++; return nil }

func TestAnonymousGroups(t *testing.T) {
	o := &anonGroups{}
	if err := ApplyDefaults(o); err != nil {
		t.Fatal(err)
	}
	if o.Connect != 5*time.Second || !o.Verify {
		t.Fatalf("defaults: %+v", o)
	}
	o.CertFile = "/c.pem"
	fes, ok := AsFieldErrors(Validate(o))
	if !ok || len(fes) != 1 || fes[0].Field != "tlsKeyFile" {
		t.Fatalf("Validate = %v, want the group's rule once", Validate(o))
	}
	calls := 0
	s := shadowing{calls: &calls}
	s.CertFile = "/c.pem"
	if err := Validate(s); err != nil || calls != 1 {
		t.Fatalf("Validate = %v after %d calls; the shadowing Validate speaks for the group", err, calls)
	}
}

// testPKI is a CA with a server certificate for 127.0.0.1/localhost and a client
// certificate, written as PEM files into a temporary directory.
type testPKI struct {
	dir                                 string
	caFile, serverCert, serverKey       string
	clientCert, clientKey, otherKeyFile string
	pool                                *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ndbench test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool.AddCert(ca)
	p.caFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = issue("client", 3, x509.ExtKeyUsageClientAuth)
	kder, _ := x509.MarshalECPrivateKey(newKey(t))
	p.otherKeyFile = writePEM(t, dir, "other-key.pem", "EC PRIVATE KEY", kder)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTLSConfig(t *testing.T) {
	p := newTestPKI(t)
	notPEM := filepath.Join(p.dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(p.dir, "missing.pem")
	tests := []struct {
		name    string
		o       TLSOptions
		wantErr string // prefix: the option at fault
		check   func(*tls.Config) bool
	}{
		{"off", TLSOptions{CAFile: missing}, "", func(c *tls.Config) bool { return c == nil }},
		{"system roots", TLSOptions{Enable: true, Verify: true},
			"", func(c *tls.Config) bool {
				return c.RootCAs == nil && !c.InsecureSkipVerify && c.MinVersion == tls.VersionTLS12
			}},
		{"CA file", TLSOptions{Enable: true, Verify: true, CAFile: p.caFile},
			"", func(c *tls.Config) bool { return c.RootCAs.Equal(p.pool) }},
		{"no verify", TLSOptions{Enable: true}, "", func(c *tls.Config) bool { return c.InsecureSkipVerify }},
		{"server name", TLSOptions{Enable: true, Verify: true, ServerName: "db.example"},
			"", func(c *tls.Config) bool { return c.ServerName == "db.example" }},
		{"client cert", TLSOptions{Enable: true, Verify: true, CertFile: p.clientCert, KeyFile: p.clientKey},
			"", func(c *tls.Config) bool { return len(c.Certificates) == 1 }},
		{"missing CA", TLSOptions{Enable: true, CAFile: missing}, "tlsCAFile: open " + missing, nil},
		{"CA not PEM", TLSOptions{Enable: true, CAFile: notPEM}, "tlsCAFile: " + notPEM + ": no PEM certificate", nil},
		{"missing cert", TLSOptions{Enable: true, CertFile: missing, KeyFile: p.clientKey}, "tlsCertFile: open " + missing, nil},
		{"missing key", TLSOptions{Enable: true, CertFile: p.clientCert, KeyFile: missing}, "tlsKeyFile: open " + missing, nil},
		{"key as cert", TLSOptions{Enable: true, CertFile: p.clientKey, KeyFile: p.clientKey}, "tlsCertFile: " + p.clientKey + ": no PEM certificate", nil},
		{"cert as key", TLSOptions{Enable: true, CertFile: p.clientCert, KeyFile: p.clientCert}, "tlsKeyFile: " + p.clientCert + ": no PEM private key", nil},
		{"key of another cert", TLSOptions{Enable: true, CertFile: p.clientCert, KeyFile: p.otherKeyFile}, "tlsCertFile and tlsKeyFile: ", nil},
		{"cert without key", TLSOptions{Enable: true, CertFile: p.clientCert}, "tlsKeyFile: invalid", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.o.Config()
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Config error %v, want one starting %q", err, tt.wantErr)
				}
				// Reported like any bad option: a field error naming the option.
				fes, ok := AsFieldErrors(err)
				if !ok || len(fes) != 1 || !strings.HasPrefix(tt.wantErr, fes[0].Field) && fes[0].Field != "tlsKeyFile" || fes[0].Allowed == "" {
					t.Fatalf("field errors %+v of %v", fes, err)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("Config = %+v, %v", c, err)
			}
		})
	}
}

// TestTLSConfigHandshakes checks the configurations Config builds against a real TLS
// server on loopback: verification by CA and host name, its opt-out, and client
// certificates for a server that requires them.
func TestTLSConfigHandshakes(t *testing.T) {
	p := newTestPKI(t)
	serverCert, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(t *testing.T, requireClientCert bool) string {
		conf := &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
		if requireClientCert {
			conf.ClientAuth, conf.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
		}
		ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_ = c.(*tls.Conn).Handshake()
					_, _ = io.Copy(io.Discard, c)
				}()
			}
		}()
		return ln.Addr().String()
	}
	tests := []struct {
		name       string
		o          TLSOptions
		clientCert bool // the server requires one
		ok         bool
	}{
		{"CA and IP", TLSOptions{Enable: true, Verify: true, CAFile: p.caFile}, false, true},
		{"CA and server name", TLSOptions{Enable: true, Verify: true, CAFile: p.caFile, ServerName: "localhost"}, false, true},
		{"wrong server name", TLSOptions{Enable: true, Verify: true, CAFile: p.caFile, ServerName: "db.example"}, false, false},
		{"unknown CA", TLSOptions{Enable: true, Verify: true}, false, false},
		{"verify off", TLSOptions{Enable: true, Verify: false}, false, true},
		{"client cert", TLSOptions{Enable: true, Verify: true, CAFile: p.caFile, CertFile: p.clientCert, KeyFile: p.clientKey}, true, true},
		{"client cert missing", TLSOptions{Enable: true, Verify: true, CAFile: p.caFile}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serve(t, tt.clientCert)
			conf, err := tt.o.Config()
			if err != nil {
				t.Fatal(err)
			}
			d := &net.Dialer{Timeout: 5 * time.Second}
			c, err := tls.DialWithDialer(d, "tcp", addr, conf)
			if err == nil {
				// TLS 1.3 reports a rejected client certificate on the first read.
				_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				_, rerr := c.Read(make([]byte, 1))
				var ne net.Error
				if rerr != nil && !(errors.As(rerr, &ne) && ne.Timeout()) {
					err = rerr
				}
				_ = c.Close()
			}
			if (err == nil) != tt.ok {
				t.Fatalf("handshake error %v, want success %v", err, tt.ok)
			}
		})
	}
}
