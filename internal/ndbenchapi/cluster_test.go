package ndbenchapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
)

// newClusterServer serves NewHandler with opts for a fresh instance, as newServer does.
func newClusterServer(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	mux := http.NewServeMux()
	mux.Handle(Prefix, NewHandler(inst, opts))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		_ = inst.Close()
	})
	return srv
}

// getStrings does a GET that must answer 200 with a JSON array of strings.
func getStrings(t *testing.T, srv *httptest.Server, path string) []string {
	t.Helper()
	status, b := call(t, srv, http.MethodGet, path, "", "")
	if status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, status, b)
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return out
}

func mustParse(t *testing.T, spec string) discovery.Discoverer {
	t.Helper()
	d, err := discovery.Parse(spec, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestClusterRoutesThisNodeAlone(t *testing.T) {
	srv := newClusterServer(t, Options{})
	if got, want := getStrings(t, srv, "/REST/ndbench/cluster/list"), []string{"ndbench"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cluster/list = %q, want %q", got, want)
	}
	// The node as the client reached it: what NDBench's UI then calls.
	self := strings.TrimPrefix(srv.URL, "http://")
	if got, want := getStrings(t, srv, "/REST/ndbench/cluster/ndbench/list"), []string{self}; !reflect.DeepEqual(got, want) {
		t.Errorf("cluster/ndbench/list = %q, want %q", got, want)
	}
}

func TestClusterRoutesFromDiscovery(t *testing.T) {
	t.Run("static list", func(t *testing.T) {
		srv := newClusterServer(t, Options{Discovery: mustParse(t, "static:10.0.0.2:8080,10.0.0.1:8080"), ClusterName: "fleet"})
		if got, want := getStrings(t, srv, "/REST/ndbench/cluster/list"), []string{"fleet"}; !reflect.DeepEqual(got, want) {
			t.Errorf("cluster/list = %q, want %q", got, want)
		}
		if got, want := getStrings(t, srv, "/REST/ndbench/cluster/fleet/list"), []string{"10.0.0.1:8080", "10.0.0.2:8080"}; !reflect.DeepEqual(got, want) {
			t.Errorf("cluster/fleet/list = %q, want %q", got, want)
		}
	})

	t.Run("NDBench's clusters.json", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "clusters.json")
		text := `{
  "localhost": ["localhost:8080"],
  "Cluster1": ["Node2:8080", "Node1:8080"]
  //"Cluster2": ["Node3:8080"]
}`
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		srv := newClusterServer(t, Options{Discovery: mustParse(t, "file:"+path)})
		if got, want := getStrings(t, srv, "/REST/ndbench/cluster/list"), []string{"Cluster1", "localhost"}; !reflect.DeepEqual(got, want) {
			t.Errorf("cluster/list = %q, want %q", got, want)
		}
		if got, want := getStrings(t, srv, "/REST/ndbench/cluster/Cluster1/list"), []string{"Node1:8080", "Node2:8080"}; !reflect.DeepEqual(got, want) {
			t.Errorf("cluster/Cluster1/list = %q, want %q", got, want)
		}
		if got, want := getStrings(t, srv, "/REST/ndbench/cluster/localhost/list/"), []string{"localhost:8080"}; !reflect.DeepEqual(got, want) {
			t.Errorf("cluster/localhost/list/ = %q, want %q", got, want)
		}

		status, r := result(t, srv, "/REST/ndbench/cluster/Cluster2/list")
		if status != http.StatusNotFound || r.IsSuccess || !strings.Contains(msg(r), `no cluster "Cluster2"; clusters: Cluster1, localhost`) {
			t.Errorf("unknown cluster: %d %+v (%s)", status, r, msg(r))
		}
		status, r = result(t, srv, "/REST/ndbench/cluster/Cluster1")
		if status != http.StatusNotFound || !strings.Contains(msg(r), "cluster/{appname}/list") {
			t.Errorf("cluster/Cluster1: %d %+v (%s)", status, r, msg(r))
		}
		status, b := call(t, srv, http.MethodPost, "/REST/ndbench/cluster/list", "", "")
		if status != http.StatusMethodNotAllowed {
			t.Errorf("POST cluster/list: %d %s", status, b)
		}

		// The file is read on each request; a broken one is NDBench's error answer.
		if err := os.WriteFile(path, []byte(`{"Cluster1": "Node1:8080"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		for path, prefix := range map[string]string{
			"/REST/ndbench/cluster/list":          "get cluster/list failed! ",
			"/REST/ndbench/cluster/Cluster1/list": "get cluster host list failed! ",
		} {
			status, r := result(t, srv, path)
			if status != http.StatusInternalServerError || r.IsSuccess || !strings.HasPrefix(msg(r), prefix) || !strings.Contains(msg(r), `cluster "Cluster1"`) {
				t.Errorf("%s with a broken file: %d %+v (%s)", path, status, r, msg(r))
			}
		}
	})
}

func TestClusterRoutesDeclared(t *testing.T) {
	want := map[string]bool{"/REST/ndbench/cluster/list": false, "/REST/ndbench/cluster/{appname}/list": false}
	for _, r := range Routes() {
		if _, ok := want[r.Path]; ok {
			want[r.Path] = true
			if r.ChangesState || !reflect.DeepEqual(r.Methods, []string{http.MethodGet}) {
				t.Errorf("%s: %+v, want a GET route that only reports", r.Path, r)
			}
		}
	}
	for p, found := range want {
		if !found {
			t.Errorf("Routes() does not list %s", p)
		}
	}
}
