package testserver

import (
	"strings"
	"testing"
	"time"
)

// TestTwemproxyYAML checks the rendered pool: defaults filled, durations in milliseconds as
// nutcracker wants them, and every backend named so ketama does not hash the port.
func TestTwemproxyYAML(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    TwemproxyConfig
		want []string
	}{
		{"defaults", TwemproxyConfig{}, []string{"hash: fnv1a_64",
			"redis: false", "auto_eject_hosts: false", "server_failure_limit: 1",
			"server_retry_timeout: 1000", "timeout: 1000",
		}},
		{"redis with ejection", TwemproxyConfig{Redis: true, Hash: "murmur", AutoEjectHosts: true, ServerFailureLimit: 2,
			ServerRetryTimeout: 1500 * time.Millisecond, Timeout: 300 * time.Millisecond}, []string{
			"hash: murmur", "redis: true", "auto_eject_hosts: true", "server_failure_limit: 2",
			"server_retry_timeout: 1500", "timeout: 300",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := twemproxyYAML("127.0.0.1:1000", tc.c.withDefaults(), []string{"127.0.0.1:1001", "127.0.0.1:1002"})
			want := append([]string{"listen: 127.0.0.1:1000", "distribution: ketama",
				"- 127.0.0.1:1001:1 b0\n", "- 127.0.0.1:1002:1 b1\n"}, tc.want...)
			for _, w := range want {
				if !strings.Contains(y, w) {
					t.Errorf("config lacks %q:\n%s", w, y)
				}
			}
		})
	}
}
