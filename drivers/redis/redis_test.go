package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ndbench/ndbench/driver"
)

func TestRegisteredWithDefaults(t *testing.T) {
	opts, err := driver.NewOptions("redis", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := opts.(*Options)
	if len(o.Addrs) != 1 || o.Addrs[0] != "127.0.0.1:6379" || o.Mode != "auto" || o.Shape != "string" ||
		o.TTL != 0 || o.HashKeyPrefix != "HM__" || o.HashFields != 2 {
		t.Errorf("defaults = %+v", o)
	}
	schema, _ := driver.Schema(o)
	for _, s := range schema {
		if s.Name == "password" && !s.Secret {
			t.Error("password is not marked secret")
		}
		if s.Name == "ttl" && !s.Live {
			t.Error("ttl is not live")
		}
	}
}

func TestOptionValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]string
		field  string // "" = valid
	}{
		{"defaults", nil, ""},
		{"bad mode", map[string]string{"mode": "fast"}, "mode"},
		{"bad shape", map[string]string{"shape": "list"}, "shape"},
		{"negative ttl", map[string]string{"ttl": "-1s"}, "ttl"},
		{"too many hash fields", map[string]string{"hashFields": "65"}, "hashFields"},
		{"spin above 1ms", map[string]string{"spinRead": "2ms"}, "spinRead"},
		{"negative spin", map[string]string{"spinRead": "-1us"}, "spinRead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := driver.NewOptions("redis", tc.values)
			checkField(t, err, tc.field)
		})
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
	}{
		{"cluster with db", Options{Addrs: []string{"h:1"}, Cluster: true, DB: 2}, "db"},
		{"address without port", Options{Addrs: []string{"localhost"}}, "addrs"},
		{"no address", Options{}, "addrs"},
		{"ok", Options{Addrs: []string{"h:1", "h:2"}, Cluster: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { checkField(t, tc.opts.Validate(), tc.field) })
	}
}

func checkField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	fes, ok := driver.AsFieldErrors(err)
	if !ok || len(fes) != 1 || fes[0].Field != field {
		t.Fatalf("err = %v, want one field error on %s", err, field)
	}
}

func TestServerClass(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  driver.Class
	}{
		{"LOADING Redis is loading the dataset in memory", driver.ClassUnavailable},
		{"BUSY Redis is busy running a script", driver.ClassUnavailable},
		{"MASTERDOWN Link with MASTER is down", driver.ClassUnavailable},
		{"TRYAGAIN Multiple keys request during rehashing of slot", driver.ClassUnavailable},
		{"CLUSTERDOWN The cluster is down", driver.ClassUnavailable},
		{"READONLY You can't write against a read only replica.", driver.ClassUnavailable},
		{"OOM command not allowed when used memory > 'maxmemory'.", driver.ClassThrottled},
		{"ERR max number of clients reached", driver.ClassThrottled},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", driver.ClassRejected},
		{"ERR unknown command 'FOO'", driver.ClassRejected},
		{"NOAUTH Authentication required.", driver.ClassRejected},
		{"WRONGPASS invalid username-password pair", driver.ClassRejected},
		{"SOMETHINGNEW happened", driver.ClassOther},
	} {
		if got := serverClass(tc.reply); got != tc.want {
			t.Errorf("serverClass(%q) = %v, want %v", tc.reply, got, tc.want)
		}
	}
}

func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want driver.Class
	}{
		{goredis.ErrPoolTimeout, driver.ClassTimeout},
		{goredis.ErrAutoPipelineTimeout, driver.ClassTimeout},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), driver.ClassTimeout},
		{goredis.ErrClosed, driver.ClassUnavailable},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), driver.ClassUnavailable},
		{io.EOF, driver.ClassUnavailable},
		{errors.New("mystery"), driver.ClassOther},
	} {
		if got := driver.Classify(classify(tc.err)); got != tc.want {
			t.Errorf("class of %v = %v, want %v", tc.err, got, tc.want)
		}
	}
	if classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
}

func TestCloseWithoutInit(t *testing.T) {
	if err := (&Driver{}).Close(); err != nil {
		t.Fatalf("Close of an uninitialised driver: %v", err)
	}
}

func TestInitUnreachableIsUnavailable(t *testing.T) {
	// Every mode dials through the driver's own dial; the message names the store once.
	for _, mode := range []string{"direct", "pool", "autopipeline"} {
		t.Run(mode, func(t *testing.T) {
			// Port 1 on loopback refuses connections.
			_, _, err := driver.Open(t.Context(), "redis", map[string]string{"addrs": "127.0.0.1:1", "dialTimeout": "1s", "mode": mode})
			if err == nil {
				t.Fatal("Open against a closed port succeeded")
			}
			if c := driver.Classify(err); c != driver.ClassUnavailable {
				t.Errorf("class = %v, want unavailable (err %v)", c, err)
			}
			if n := strings.Count(err.Error(), "connect to redis at 127.0.0.1:1"); n != 1 {
				t.Errorf("error %q says where it connected %d times, want once", err, n)
			}
			if !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("error %q does not say the connection was refused", err)
			}
		})
	}
}

// TestOpenOnAWebPortSaysSo: pointed at an HTTP server (a common slip of the port), Init
// fails in every mode saying it is not a Redis server and that it answered HTTP.
func TestOpenOnAWebPortSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, mode := range []string{"direct", "pool"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d, _, err := driver.Open(ctx, "redis", map[string]string{"addrs": addr, "mode": mode})
		cancel()
		if err == nil {
			d.Close()
			t.Fatalf("mode=%s: Open on an HTTP server succeeded", mode)
		}
		if !strings.Contains(err.Error(), "not a Redis server: it answered HTTP") {
			t.Errorf("mode=%s: %v; want it to say the server answered HTTP", mode, err)
		}
	}
}
