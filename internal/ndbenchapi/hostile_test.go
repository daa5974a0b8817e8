package ndbenchapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestHostileInputs sends NDBench's routes that take input (config/set's JSON body, form
// and query; the start routes' parameters) bodies and values of the wrong shape and
// numbers no node can honour: none answers 5xx, a refusal is NDBench's error body with a
// message, and the node answers its status after each.
func TestHostileInputs(t *testing.T) {
	srv, _ := newServer(t)
	mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
	bodies := []string{
		`null`, `[]`, `1`, `"s"`, `{`, `{"numReaders":{"a":1}}`, `{"numReaders":[1,2]}`, `{"readRateLimit":1e999}`,
		strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000),
		`{"numReaders":"` + strings.Repeat("9", 1<<16) + `"}`,
	}
	for _, b := range bodies {
		status, got := call(t, srv, http.MethodPost, "/REST/ndbench/config/set", "application/json", b)
		what := b
		if len(what) > 60 {
			what = what[:60] + "..."
		}
		if status >= 500 || status == http.StatusOK {
			t.Errorf("config/set %s: %d %s, want a 4xx", what, status, got)
		} else if r := decodeResult(t, got); r.IsSuccess || r.Message == nil {
			t.Errorf("config/set %s: error body %s", what, got)
		}
	}
	for _, prop := range []string{"numReaders", "numWriters", "readRateLimit", "writeRateLimit", "numKeys", "numValues", "dataSize"} {
		for _, v := range []string{"-1", "NaN", "+Inf", "-Inf", "1e308", "-1e308", "18446744073709551616", "x"} {
			path := "/REST/ndbench/config/set?" + url.Values{prop: {v}}.Encode()
			status, got := call(t, srv, http.MethodGet, path, "", "")
			if status >= 500 || status == http.StatusOK {
				t.Errorf("config/set %s=%s: %d %s, want a 4xx", prop, v, status, got)
			} else if !strings.Contains(string(got), prop) && !strings.Contains(strings.ToLower(string(got)), "workload.") {
				t.Errorf("config/set %s=%s: %s does not name the property", prop, v, got)
			}
		}
	}
	for _, path := range []string{"/REST/ndbench/driver/startReads?loadPattern=%7B%22a%22%3A1%7D", "/REST/ndbench/driver/startReads?windowSize=1e308",
		"/REST/ndbench/driver/start?numReaders=NaN", "/REST/ndbench/driver/startWrites?windowDurationInSec=-1"} {
		status, got := call(t, srv, http.MethodGet, path, "", "")
		if status >= 500 {
			t.Errorf("%s: %d %s", path, status, got)
		}
		mustSucceed(t, srv, "/REST/ndbench/driver/stop")
	}
	if status, got := call(t, srv, http.MethodGet, "/REST/ndbench/driver/getserverstatus", "", ""); status != http.StatusOK {
		t.Errorf("status after the hostile inputs: %d %s", status, got)
	}
}
