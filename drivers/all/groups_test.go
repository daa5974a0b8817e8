package all

import (
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// TestGroupedOptionsKeepOldBehaviour: the bundled drivers declare TLS, authentication and
// timeouts through the driver option groups; every name, default and bound a user's
// configuration relied on before must still mean the same.
func TestGroupedOptionsKeepOldBehaviour(t *testing.T) {
	tests := []struct {
		driver string
		values map[string]string
		want   map[string]string // option -> value after NewOptions; nil: rejected
	}{
		// Defaults as before the groups.
		{"redis", nil, map[string]string{"connectTimeout": "5s", "tls": "false", "tlsVerify": "true", "tlsSkipVerify": "false", "username": ""}},
		{"cassandra", nil, map[string]string{"connectTimeout": "5s", "timeout": "5s", "tlsVerify": "true"}},
		{"postgres", nil, map[string]string{"connectTimeout": "5s"}},
		{"memcached", nil, map[string]string{"timeout": "1s"}},
		// Old names, now aliases.
		{"redis", map[string]string{"dialTimeout": "250ms"}, map[string]string{"connectTimeout": "250ms"}},
		{"cassandra", map[string]string{"tlsVerifyHost": "false"}, map[string]string{"tlsVerify": "false"}},
		// The inverted redis option is kept as it was.
		{"redis", map[string]string{"tls": "true", "tlsSkipVerify": "true"}, map[string]string{"tlsSkipVerify": "true", "tlsVerify": "true"}},
		// Bounds as before: redis and memcached had a 1ms minimum and no maximum, then
		// one of an hour (a value of 1e308 or 2562047h was kept; issue 39).
		{"redis", map[string]string{"dialTimeout": "1ms"}, map[string]string{"connectTimeout": "1ms"}},
		{"redis", map[string]string{"connectTimeout": "10m"}, map[string]string{"connectTimeout": "10m0s"}},
		{"redis", map[string]string{"connectTimeout": "2h"}, nil},
		{"memcached", map[string]string{"timeout": "1ms"}, map[string]string{"timeout": "1ms"}},
		{"memcached", map[string]string{"timeout": "1h"}, map[string]string{"timeout": "1h0m0s"}},
		{"memcached", map[string]string{"timeout": "2h"}, nil},
		{"cassandra", map[string]string{"connectTimeout": "50ms"}, nil},
		{"cassandra", map[string]string{"timeout": "5ms"}, nil},
		{"cassandra", map[string]string{"timeout": "6m"}, nil},
		{"postgres", map[string]string{"connectTimeout": "1ms"}, nil},
		// Options of a group a driver does not offer stay unknown.
		{"redis", map[string]string{"timeout": "1s"}, nil},
		{"postgres", map[string]string{"timeout": "1s"}, nil},
		{"memcached", map[string]string{"connectTimeout": "1s"}, nil},
		// The group's rule, in every driver embedding it.
		{"redis", map[string]string{"tlsCertFile": "/c.pem"}, nil},
		{"cassandra", map[string]string{"tlsKeyFile": "/k.pem"}, nil},
	}
	for _, tt := range tests {
		opts, err := driver.NewOptions(tt.driver, tt.values)
		if tt.want == nil {
			if _, ok := driver.AsFieldErrors(err); !ok {
				t.Errorf("%s %v: error %v, want field errors", tt.driver, tt.values, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v: %v", tt.driver, tt.values, err)
			continue
		}
		got := driver.Values(opts, true)
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s %v: %s = %q, want %q", tt.driver, tt.values, k, got[k], v)
			}
		}
	}
}

// TestGroupedSecretsRedacted: the password of AuthOptions is redacted in every driver
// that embeds it, and a mistyped name never echoes its value.
func TestGroupedSecretsRedacted(t *testing.T) {
	const secret = "Sup3r-s3cret-pw"
	for _, name := range []string{"redis", "cassandra"} {
		opts, err := driver.NewOptions(name, map[string]string{"username": "u", "password": secret})
		if err != nil {
			t.Fatal(err)
		}
		if v := driver.Values(opts, true)["password"]; v != driver.Redacted {
			t.Errorf("%s: shown password = %q", name, v)
		}
		for _, typo := range []string{"pasword", "Passwd", "auth.password", "tlsPassword"} {
			_, err := driver.NewOptions(name, map[string]string{typo: secret})
			if err == nil || strings.Contains(err.Error(), secret) {
				t.Errorf("%s: mistyped %s: error %v", name, typo, err)
			}
		}
	}
}
