package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
)

// A fleet view served under a node with a token answers requests that name the node's
// own address off loopback (a coordinator reached at 10.0.0.5), as the node's routes do:
// the node's auth checked the token; a request without it is refused by the node.
func TestMountedFleetViewServesOffLoopback(t *testing.T) {
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	defer inst.Close()
	view, err := New(Options{Instance: inst, Mounted: true})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	outer, err := New(Options{Instance: inst, Token: testToken, Fleet: view.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Close()
	for _, tc := range []struct {
		name, host, token string
		want              int
	}{
		{"off loopback with the token", "10.0.0.5:8080", testToken, http.StatusOK},
		{"on loopback with the token", "127.0.0.1:8080", testToken, http.StatusOK},
		{"off loopback without a token", "10.0.0.5:8080", "", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(http.MethodGet, FleetPrefix+"/api/v1/status", nil)
		req.Host = tc.host
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		outer.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body.String(), tc.want)
		}
	}
}
