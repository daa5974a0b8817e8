package otlpexport

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ndbench/ndbench/internal/clock"
)

// Environment variables read when the matching setting is not given, as the
// OpenTelemetry specification names them.
const (
	EnvEndpoint   = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvHeaders    = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	// EnvProtocol (grpc or http/protobuf) applies to an endpoint from EnvEndpoint only:
	// the flag's URL says its protocol itself.
	EnvProtocol = "OTEL_EXPORTER_OTLP_PROTOCOL"
)

// DefaultInterval is how often metrics are pushed unless set.
const DefaultInterval = 10 * time.Second

// Settings are the user's choices, as the command-line flags give them. Empty fields
// fall back to the environment (Endpoint, Headers, Attributes) or to the defaults.
type Settings struct {
	Endpoint    string
	Interval    time.Duration
	Headers     []string // key=value
	Temporality string   // cumulative (default) or delta
	Histogram   string   // explicit (default) or exponential
	Insecure    bool
	Attributes  []string // key=value resource attributes
	// InstanceID is the default service.instance.id: the node id or listen address.
	InstanceID string
	// Version is service.version.
	Version string
}

// Config is a checked export configuration.
type Config struct {
	// GRPC selects OTLP/gRPC, otherwise OTLP/HTTP (protobuf).
	GRPC bool
	// Insecure sends in plain text (no TLS).
	Insecure bool
	Interval time.Duration
	// Headers are sent with every export. Their values are secrets (tokens): never
	// print them.
	Headers map[string]string
	// Delta exports the change since the previous export instead of the total since the
	// start.
	Delta bool
	// Exponential exports exponential histograms instead of explicit-bucket ones
	// (Bounds): finer, but not every backend takes them, and Prometheus stores them as
	// native histograms only, which the classic-bucket queries of dashboards do not see.
	Exponential bool
	// Attributes are the resource attributes, service.name and service.instance.id
	// included.
	Attributes map[string]string
	// Clock times the periodic exports, the data points and the failure log's pace; nil
	// means clock.Real. Tests pass a clock.Sim to decide when an export starts.
	Clock clock.Clock

	hostPort, path string
}

// Parse checks s and completes it from getenv. enabled is false when no endpoint is set
// (neither Settings.Endpoint nor OTEL_EXPORTER_OTLP_ENDPOINT): then there is nothing to
// export. Errors name the flag (--otlp-...) or the variable, and never quote a header
// value.
func Parse(s Settings, getenv func(string) string) (cfg Config, enabled bool, err error) {
	endpoint, fromEnv := s.Endpoint, false
	if endpoint == "" {
		endpoint, fromEnv = strings.TrimSpace(getenv(EnvEndpoint)), true
	}
	if endpoint == "" {
		return Config{}, false, nil
	}
	what := "--otlp-endpoint"
	if fromEnv {
		what = EnvEndpoint
	}
	if err := cfg.parseEndpoint(endpoint, fromEnv, s.Insecure); err != nil {
		return Config{}, false, fmt.Errorf("%s: %w", what, err)
	}
	if fromEnv {
		switch p := getenv(EnvProtocol); p {
		case "", "http/protobuf":
		case "grpc":
			if !cfg.GRPC {
				// The variable's URL is then a gRPC address: the scheme only says TLS or not.
				cfg.GRPC = true
				cfg.path = ""
			}
		default:
			return Config{}, false, fmt.Errorf("%s: invalid value %q; allowed: grpc, http/protobuf", EnvProtocol, p)
		}
	}
	cfg.Interval = s.Interval
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < 0 {
		return Config{}, false, fmt.Errorf("--otlp-interval: invalid value %s; allowed: a positive duration, e.g. 10s", s.Interval)
	}
	switch s.Temporality {
	case "", "cumulative":
	case "delta":
		cfg.Delta = true
	default:
		return Config{}, false, fmt.Errorf("--otlp-temporality: invalid value %q; allowed: cumulative, delta", s.Temporality)
	}
	switch s.Histogram {
	case "", "explicit":
	case "exponential":
		cfg.Exponential = true
	default:
		return Config{}, false, fmt.Errorf("--otlp-histogram: invalid value %q; allowed: explicit, exponential", s.Histogram)
	}
	if len(s.Headers) > 0 {
		cfg.Headers, err = pairs("--otlp-header", s.Headers, false, true)
	} else if h := getenv(EnvHeaders); h != "" {
		cfg.Headers, err = pairs(EnvHeaders, strings.Split(h, ","), true, true)
	}
	if err != nil {
		return Config{}, false, err
	}
	if cfg.Headers == nil {
		cfg.Headers = map[string]string{}
	}
	// Resource attributes: the flags over the variable over the defaults.
	cfg.Attributes = map[string]string{"service.name": "ndbench"}
	if s.Version != "" {
		cfg.Attributes["service.version"] = s.Version
	}
	if s.InstanceID != "" {
		cfg.Attributes["service.instance.id"] = s.InstanceID
	}
	if a := getenv(EnvAttributes); a != "" {
		m, err := pairs(EnvAttributes, strings.Split(a, ","), true, false)
		if err != nil {
			return Config{}, false, err
		}
		maps.Copy(cfg.Attributes, m)
	}
	m, err := pairs("--otlp-attribute", s.Attributes, false, false)
	if err != nil {
		return Config{}, false, err
	}
	maps.Copy(cfg.Attributes, m)
	return cfg, true, nil
}

// parseEndpoint sets the protocol, address and path from an endpoint URL.
//
// http:// and https:// select OTLP/HTTP, except on port 4317 (OTLP/gRPC's); grpc:// and
// a bare HOST:4317 select OTLP/gRPC. An OTLP/HTTP URL from the flag is used as given
// (/v1/metrics when it has no path); from OTEL_EXPORTER_OTLP_ENDPOINT it is a base URL
// that /v1/metrics is appended to, as the specification says.
func (c *Config) parseEndpoint(endpoint string, base, insecure bool) error {
	const allowed = "allowed: http://HOST:PORT[/PATH] or https://... (OTLP/HTTP), grpc://HOST:PORT or HOST:4317 (OTLP/gRPC; http:// or https:// on port 4317 too)"
	if !strings.Contains(endpoint, "://") {
		_, port, err := net.SplitHostPort(endpoint)
		if err != nil || port != "4317" {
			return fmt.Errorf("invalid value %q; %s", redactURL(endpoint), allowed)
		}
		c.GRPC, c.Insecure, c.hostPort = true, insecure, endpoint
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("invalid value %q; %s", redactURL(endpoint), allowed)
	}
	c.hostPort = u.Host
	switch u.Scheme {
	case "grpc":
		c.GRPC, c.Insecure = true, insecure
	case "http", "https":
		if u.Scheme == "https" && insecure {
			return fmt.Errorf("an https:// endpoint with --otlp-insecure: use http:// for plain text")
		}
		c.Insecure = u.Scheme == "http"
		if u.Port() == "4317" {
			c.GRPC = true
			break
		}
		c.path = u.Path
		if base {
			c.path = strings.TrimSuffix(u.Path, "/") + "/v1/metrics"
		} else if c.path == "" || c.path == "/" {
			c.path = "/v1/metrics"
		}
	default:
		return fmt.Errorf("invalid scheme %q; %s", u.Scheme, allowed)
	}
	if c.GRPC && u.Path != "" && u.Path != "/" {
		return fmt.Errorf("an OTLP/gRPC endpoint has no path, got %q; %s", u.Path, allowed)
	}
	return nil
}

// Redacted is the endpoint for messages: protocol, host and path.
func (c *Config) Redacted() string {
	if c.GRPC {
		return "grpc://" + c.hostPort
	}
	scheme := "https://"
	if c.Insecure {
		scheme = "http://"
	}
	return scheme + c.hostPort + c.path
}

// redactURL drops what may be a credential (user info, query) from a URL for an error.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			return "REDACTED@" + s[i+1:]
		}
		return s
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

// pairs parses key=value entries. escaped entries (the OTEL_* variables) are
// URL-encoded. secret values are never put in an error.
func pairs(what string, entries []string, escaped, secret bool) (map[string]string, error) {
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		if escaped && strings.TrimSpace(e) == "" {
			continue
		}
		k, v, ok := strings.Cut(e, "=")
		k = strings.TrimSpace(k)
		if escaped {
			v = strings.TrimSpace(v)
			if dk, err := url.PathUnescape(k); err == nil {
				k = dk
			}
			if dv, err := url.PathUnescape(v); err == nil {
				v = dv
			}
		}
		if !ok || k == "" {
			if secret {
				return nil, fmt.Errorf("%s: an entry is not key=value (entries: %s)", what, strings.Join(keysOf(entries), ", "))
			}
			return nil, fmt.Errorf("%s: invalid entry %q; want key=value", what, e)
		}
		out[k] = v
	}
	return out, nil
}

// keysOf lists the key part of each entry, for an error that must not quote values.
func keysOf(entries []string) []string {
	var ks []string
	for _, e := range entries {
		k, _, ok := strings.Cut(e, "=")
		if !ok {
			ks = append(ks, "(no =)")
			continue
		}
		ks = append(ks, fmt.Sprintf("%q", k))
	}
	return ks
}

// resourceAttributes are the resource attributes in a stable order.
func (c *Config) resourceAttributes() []attribute.KeyValue {
	var kv []attribute.KeyValue
	for _, k := range slices.Sorted(maps.Keys(c.Attributes)) {
		kv = append(kv, attribute.String(k, c.Attributes[k]))
	}
	return kv
}
