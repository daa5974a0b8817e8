package otlpexport

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s        Settings
		env      map[string]string
		enabled  bool
		redacted string // Config.Redacted
		insecure bool
		headers  map[string]string
		attrs    map[string]string
		err      string // substring of the error; it must not contain "s3cret"
	}{
		{name: "nothing set", enabled: false},
		{name: "http base path", s: Settings{Endpoint: "http://c:4318"}, enabled: true, redacted: "http://c:4318/v1/metrics", insecure: true},
		{name: "http path kept", s: Settings{Endpoint: "https://otlp.example.com/otlp/v1/metrics"}, enabled: true, redacted: "https://otlp.example.com/otlp/v1/metrics"},
		{name: "port 4317 is gRPC", s: Settings{Endpoint: "http://c:4317"}, enabled: true, redacted: "grpc://c:4317", insecure: true},
		{name: "grpc scheme TLS", s: Settings{Endpoint: "grpc://c:9000"}, enabled: true, redacted: "grpc://c:9000"},
		{name: "grpc insecure", s: Settings{Endpoint: "grpc://c:9000", Insecure: true}, enabled: true, redacted: "grpc://c:9000", insecure: true},
		{name: "bare 4317", s: Settings{Endpoint: "c:4317"}, enabled: true, redacted: "grpc://c:4317"},
		{name: "bare other port", s: Settings{Endpoint: "c:4318"}, err: "--otlp-endpoint: invalid value \"c:4318\"; allowed: http://"},
		{name: "bad scheme", s: Settings{Endpoint: "ftp://c:1"}, err: "--otlp-endpoint: invalid scheme \"ftp\""},
		{name: "https insecure", s: Settings{Endpoint: "https://c:4318", Insecure: true}, err: "--otlp-endpoint: an https:// endpoint with --otlp-insecure"},
		{name: "user info not echoed", s: Settings{Endpoint: "ftp://u:s3cret@c:1"}, err: "invalid scheme"},
		{name: "env endpoint is a base URL", env: map[string]string{EnvEndpoint: "http://c:4318/base/"}, enabled: true, redacted: "http://c:4318/base/v1/metrics", insecure: true},
		{name: "flag over env", s: Settings{Endpoint: "http://flag:4318"}, env: map[string]string{EnvEndpoint: "http://env:4318"}, enabled: true, redacted: "http://flag:4318/v1/metrics", insecure: true},
		{name: "env protocol grpc", env: map[string]string{EnvEndpoint: "http://c:9000", EnvProtocol: "grpc"}, enabled: true, redacted: "grpc://c:9000", insecure: true},
		{name: "env protocol ignored for the flag", s: Settings{Endpoint: "http://c:9000"}, env: map[string]string{EnvProtocol: "grpc"}, enabled: true, redacted: "http://c:9000/v1/metrics", insecure: true},
		{name: "env protocol json", env: map[string]string{EnvEndpoint: "http://c:4318", EnvProtocol: "http/json"}, err: EnvProtocol + `: invalid value "http/json"; allowed: grpc, http/protobuf`},
		{name: "bad env endpoint names the variable", env: map[string]string{EnvEndpoint: "nope"}, err: EnvEndpoint + ": invalid value"},
		{name: "temporality", s: Settings{Endpoint: "http://c:1", Temporality: "weekly"}, err: `--otlp-temporality: invalid value "weekly"; allowed: cumulative, delta`},
		{name: "histogram", s: Settings{Endpoint: "http://c:1", Histogram: "hdr"}, err: `--otlp-histogram: invalid value "hdr"; allowed: explicit, exponential`},
		{name: "interval", s: Settings{Endpoint: "http://c:1", Interval: -time.Second}, err: "--otlp-interval: invalid value -1s"},
		{name: "header without = is not echoed", s: Settings{Endpoint: "http://c:1", Headers: []string{"a=1", "s3cret"}}, err: `--otlp-header: an entry is not key=value (entries: "a", (no =))`},
		{name: "env headers decoded", s: Settings{Endpoint: "http://c:1"}, env: map[string]string{EnvHeaders: "api-key=s3cret%3D,x=y"}, enabled: true,
			redacted: "http://c:1/v1/metrics", insecure: true, headers: map[string]string{"api-key": "s3cret=", "x": "y"}},
		{name: "flag headers replace env", s: Settings{Endpoint: "http://c:1", Headers: []string{"a=b=c"}}, env: map[string]string{EnvHeaders: "api-key=s3cret"}, enabled: true,
			redacted: "http://c:1/v1/metrics", insecure: true, headers: map[string]string{"a": "b=c"}},
		{name: "resource attributes", s: Settings{Endpoint: "http://c:1", InstanceID: "n1", Attributes: []string{"team=db", "service.name=bench"}},
			env: map[string]string{EnvAttributes: "team=x,region=eu"}, enabled: true, redacted: "http://c:1/v1/metrics", insecure: true,
			attrs: map[string]string{"service.name": "bench", "service.instance.id": "n1", "team": "db", "region": "eu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, enabled, err := Parse(tc.s, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error quotes a secret: %v", err)
				}
				return
			}
			if err != nil || enabled != tc.enabled {
				t.Fatalf("Parse = %v, %v; want enabled %v", enabled, err, tc.enabled)
			}
			if !enabled {
				return
			}
			if got := cfg.Redacted(); got != tc.redacted || cfg.Insecure != tc.insecure {
				t.Errorf("endpoint %s insecure %v, want %s insecure %v", got, cfg.Insecure, tc.redacted, tc.insecure)
			}
			for k, v := range tc.headers {
				if cfg.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, cfg.Headers[k], v)
				}
			}
			if tc.headers != nil && len(cfg.Headers) != len(tc.headers) {
				t.Errorf("headers %v, want %v", cfg.Headers, tc.headers)
			}
			for k, v := range tc.attrs {
				if cfg.Attributes[k] != v {
					t.Errorf("attribute %s = %q, want %q", k, cfg.Attributes[k], v)
				}
			}
		})
	}
}
