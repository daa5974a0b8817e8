package geode

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

func TestOptionValidation(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]string
		badOpts []string // option names expected in field errors; empty means valid
	}{
		{"defaults", nil, nil},
		{"https", map[string]string{"url": "https://geode.internal:7070/geode/v1"}, nil},
		{"no scheme", map[string]string{"url": "127.0.0.1:7070"}, []string{"url"}},
		{"credentials in the url", map[string]string{"url": "http://u:secretpw@h:7070/geode/v1"}, []string{"url"}},
		{"empty region", map[string]string{"region": ""}, []string{"region"}},
		{"region with a slash", map[string]string{"region": "a/b"}, []string{"region"}},
		{"pool size zero", map[string]string{"poolSize": "0"}, []string{"poolSize"}},
		{"timeout too short", map[string]string{"timeout": "1ms"}, []string{"timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := driver.NewOptions("geode", tt.values)
			if len(tt.badOpts) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok {
				t.Fatalf("want field errors for %v, got %v", tt.badOpts, err)
			}
			for _, want := range tt.badOpts {
				found := false
				for _, fe := range fes {
					found = found || (fe.Field == want && fe.Allowed != "")
				}
				if !found {
					t.Errorf("no field error naming %s with the allowed values in %v", want, fes)
				}
			}
			if strings.Contains(err.Error(), "secretpw") {
				t.Errorf("error shows the URL's password: %v", err)
			}
		})
	}
}

func TestStatusClasses(t *testing.T) {
	d := &Driver{}
	for _, tt := range []struct {
		status int
		body   string
		want   driver.Class
	}{
		{http.StatusNotFound, "", driver.ClassUnavailable}, // the web app not deployed yet
		{http.StatusNotFound, `{"cause":"Region (x) not found"}`, driver.ClassRejected},
		{http.StatusBadRequest, `{"cause":"bad JSON"}`, driver.ClassRejected},
		{http.StatusUnauthorized, "", driver.ClassRejected},
		{http.StatusTooManyRequests, "", driver.ClassThrottled},
		{http.StatusServiceUnavailable, "", driver.ClassUnavailable},
		{http.StatusGatewayTimeout, "", driver.ClassTimeout},
		{http.StatusInternalServerError, "{}", driver.ClassOther},
	} {
		if got := driver.Classify(d.statusError("op", tt.status, []byte(tt.body))); got != tt.want {
			t.Errorf("HTTP %d %q: class %v, want %v", tt.status, tt.body, got, tt.want)
		}
	}
}

func TestKeyURL(t *testing.T) {
	d := &Driver{base: "http://h/geode/v1/r/"}
	if u, err := d.keyURL("k 1?#"); err != nil || u != "http://h/geode/v1/r/k%201%3F%23" {
		t.Errorf("keyURL: %q, %v", u, err)
	}
	for _, k := range []string{"", ".", "..", "a,b", "a/b", "a%b", "a;b", `a\b`, "é", "tab\t"} {
		if _, err := d.keyURL(k); driver.Classify(err) != driver.ClassRejected {
			t.Errorf("key %q: %v, want rejected", k, err)
		}
	}
}
