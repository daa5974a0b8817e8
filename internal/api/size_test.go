package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
)

// TestChangeSizeLimit: one change may hold at most config.MaxChangeKeys keys, through the
// API and NDBench's config/set alike; the OpenAPI document states the same limit.
func TestChangeSizeLimit(t *testing.T) {
	e := newEnv(t)
	over := map[string]string{}
	q := url.Values{}
	for i := range config.MaxChangeKeys + 1 {
		over[fmt.Sprintf("drivers.zzz.opt%d", i)] = "1"
		q.Set(fmt.Sprintf("drivers.zzz.opt%d", i), "1")
	}
	v0 := e.configVersion()
	st, body := e.call("PATCH", "/api/v1/config", map[string]any{"values": over})
	if st != http.StatusUnprocessableEntity || !strings.Contains(string(body), fmt.Sprint(config.MaxChangeKeys)) {
		t.Errorf("PATCH of %d keys: %d %.300s; want 422 naming the limit", len(over), st, body)
	}
	st, body = e.call("POST", "/api/v1/driver/init", map[string]any{"driver": "memory", "options": over})
	if st != http.StatusUnprocessableEntity || !strings.Contains(string(body), fmt.Sprint(config.MaxChangeKeys)) {
		t.Errorf("init with %d options: %d %.300s; want 422 naming the limit", len(over), st, body)
	}
	st, body = e.call("POST", "/REST/ndbench/config/set?"+q.Encode(), nil)
	if st != http.StatusBadRequest || !strings.Contains(string(body), fmt.Sprint(config.MaxChangeKeys)) {
		t.Errorf("config/set of %d keys: %d %.300s; want 400 naming the limit", len(over), st, body)
	}
	if v := e.configVersion(); v != v0 {
		t.Errorf("config version moved from %d to %d", v0, v)
	}
	delete(over, "drivers.zzz.opt0")
	e.must(200, "PATCH", "/api/v1/config", map[string]any{"values": over}, nil)

	props := e.srv.OpenAPI().Components.Schemas.Map()["PatchRequest"].Properties["values"]
	if props.MaxProperties == nil || *props.MaxProperties != config.MaxChangeKeys {
		t.Errorf("OpenAPI PatchRequest.values maxProperties = %v, want %d", props.MaxProperties, config.MaxChangeKeys)
	}
}
