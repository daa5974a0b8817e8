package driver

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"time"
)

// The option groups below are the options most network drivers share. A driver embeds
// one as a named field, e.g.
//
//	TLS      driver.TLSOptions
//	Auth     driver.AuthOptions
//	Timeouts driver.TimeoutOptions `connectTimeout.default:"10s" timeout.alias:"requestTimeout"`
//
// so that every driver spells, bounds, validates and redacts them the same way, and a user
// who knows tlsCAFile from one driver knows it for all. The embedding field's tags adjust
// a group for one driver (defaults, bounds, help, aliases, options it does not offer):
// see the package's Options documentation. Named fields are preferred to anonymous
// embedding, which would promote the groups' methods (Validate, Config) into the
// driver's options struct, where two groups' methods collide.

// TLSOptions are a client's TLS settings. Verification is on by default: switching it
// off is an explicit choice for test servers with self-signed certificates.
type TLSOptions struct {
	Enable     bool   `opt:"tls" default:"false" help:"connect with TLS"`
	CAFile     string `opt:"tlsCAFile" default:"" reach:"path" help:"PEM file of the CAs to verify the server with; empty uses the system roots"`
	CertFile   string `opt:"tlsCertFile" default:"" reach:"path" help:"PEM client certificate, for servers that require one (with tlsKeyFile)"`
	KeyFile    string `opt:"tlsKeyFile" default:"" reach:"path" help:"PEM private key of tlsCertFile"`
	Verify     bool   `opt:"tlsVerify" default:"true" help:"verify the server certificate and host name; false accepts any certificate (testing only)"`
	ServerName string `opt:"tlsServerName" default:"" help:"host name the server certificate must carry; empty uses the host dialled"`
}

// Validate checks what can be checked without the file system: a client certificate and
// its key come together. Whether the files exist and parse is Config's business, at Init,
// on the node that reads them.
func (o TLSOptions) Validate() error {
	var errs FieldErrors
	if o.CertFile != "" && o.KeyFile == "" {
		errs = append(errs, &FieldError{Field: "tlsKeyFile",
			Allowed: "the PEM key of tlsCertFile " + o.CertFile + " (tlsCertFile and tlsKeyFile are set together or not at all)"})
	}
	if o.KeyFile != "" && o.CertFile == "" {
		errs = append(errs, &FieldError{Field: "tlsCertFile",
			Allowed: "the PEM certificate of tlsKeyFile " + o.KeyFile + " (tlsCertFile and tlsKeyFile are set together or not at all)"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Config builds the crypto/tls client configuration, or returns nil when TLS is off. It
// reads the CA, certificate and key files, so it belongs in Init; errors name the option
// whose file failed ("tlsCAFile: open /x: no such file or directory"). ServerName is
// left empty unless tlsServerName is set: crypto/tls and the client libraries then use
// the host of each address dialled, which is right for clusters with several nodes. A
// CA file replaces the system roots rather than adding to them, so a private CA is all
// that is trusted.
func (o TLSOptions) Config() (*tls.Config, error) {
	if !o.Enable {
		return nil, nil
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.ServerName,
		InsecureSkipVerify: !o.Verify, //nolint:gosec // the user's explicit choice (tlsVerify=false)
	}
	if o.CAFile != "" {
		b, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, &fileError{"tlsCAFile", o.CAFile, "a readable PEM file of CA certificates", err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, &fileError{"tlsCAFile", o.CAFile, "a PEM file of CA certificates", fmt.Errorf("%s: no PEM certificate found", o.CAFile)}
		}
		c.RootCAs = pool
	}
	if o.CertFile != "" {
		cert, err := loadKeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// loadKeyPair is tls.LoadX509KeyPair with errors that say which option's file is at
// fault: the standard one names neither option nor, for a mismatch, the files.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	const certAllowed, keyAllowed = "a readable PEM certificate file", "a readable PEM private key file"
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, &fileError{"tlsCertFile", certFile, certAllowed, err}
	}
	if !hasPEMBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return tls.Certificate{}, &fileError{"tlsCertFile", certFile, certAllowed, fmt.Errorf("%s: no PEM certificate found", certFile)}
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, &fileError{"tlsKeyFile", keyFile, keyAllowed, err}
	}
	if !hasPEMBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return tls.Certificate{}, &fileError{"tlsKeyFile", keyFile, keyAllowed, fmt.Errorf("%s: no PEM private key found", keyFile)}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The key's text never appears in crypto/tls's errors, only its kind.
		return tls.Certificate{}, &fileError{"tlsCertFile and tlsKeyFile", keyFile, "the private key of tlsCertFile " + certFile,
			fmt.Errorf("%s and %s: %w", certFile, keyFile, err)}
	}
	return cert, nil
}

// fileError is a TLS file that cannot be used. Its message names the option and keeps the
// cause ("tlsCAFile: open /x: no such file or directory"); errors.Is sees the cause
// (fs.ErrNotExist), and errors.As, so AsFieldErrors, sees a FieldError naming the option,
// so the file is reported like any other bad option value.
type fileError struct {
	option, path, allowed string
	err                   error
}

// Error names the option, then the cause.
func (e *fileError) Error() string { return e.option + ": " + e.err.Error() }

// Unwrap returns the cause.
func (e *fileError) Unwrap() error { return e.err }

// As offers the error as a *FieldError. The field of a key that does not match its
// certificate is tlsKeyFile: the key is what must change.
func (e *fileError) As(target any) bool {
	p, ok := target.(**FieldError)
	if !ok {
		return false
	}
	field := e.option
	if strings.Contains(field, " and ") {
		field = "tlsKeyFile"
	}
	*p = &FieldError{Field: field, Value: e.path, Allowed: e.allowed + " (" + e.err.Error() + ")"}
	return true
}

// hasPEMBlock reports whether b holds a PEM block whose type matches.
func hasPEMBlock(b []byte, match func(string) bool) bool {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return false
		}
		if match(blk.Type) {
			return true
		}
	}
}

// AuthOptions are a user name and password. The password is secret: the schema marks
// it, so it is redacted wherever options are shown, and String keeps it out of %v.
type AuthOptions struct {
	Username string `opt:"username" default:"" help:"user name; empty for no authentication"`
	Password string `opt:"password" default:"" secret:"true" help:"password; never logged or reported"`
}

// String shows the user name and whether a password is set, never the password, so
// printing options with %v (a test failure, a debug log) cannot leak it.
func (o AuthOptions) String() string {
	return fmt.Sprintf("{username=%s password=%s}", o.Username, Shown(true, o.Password))
}

// GoString is String for %#v, which would otherwise print the fields verbatim.
func (o AuthOptions) GoString() string { return "driver.AuthOptions" + o.String() }

// TimeoutOptions are the two client-side timeouts most protocols have: one to establish
// a connection and one for each request. The defaults (5s each) suit a server on the
// same network under load; a driver whose client library has other sensible defaults
// changes them on its embedding field (connectTimeout.default:"..."), so its users get
// the library's behaviour. The bounds keep a typo (5ms for 5s, 5h) from producing a
// benchmark of nothing but timeouts or of hangs. The op context's deadline applies as
// well, whichever ends first.
type TimeoutOptions struct {
	Connect time.Duration `opt:"connectTimeout" default:"5s" min:"100ms" max:"5m" help:"timeout for establishing a connection"`
	Request time.Duration `opt:"timeout" default:"5s" min:"10ms" max:"5m" help:"client-side timeout of one request (the op's context deadline applies as well)"`
}
