package discovery

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ndbenchSample is ndbench-core/src/main/resources/clusters.json as Netflix/ndbench ships
// it, comment included.
const ndbenchSample = `{
  "localhost": ["localhost:8080"]
  //"Cluster1": ["Node1:8080","Node2:8080"]
}`

func writeClusters(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clusters.json")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadClusters(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[string][]Member
	}{
		{"NDBench's own sample", ndbenchSample, map[string][]Member{
			"localhost": {{ID: "localhost:8080", Addr: "localhost:8080", Cluster: "localhost"}}}},
		{"several clusters, comments of every kind", `
# written by hand
{
  /* the store under test */
  "Cluster1": ["node2:8080", "node1:8080"], // two nodes
  "Cluster2": ["10.0.0.3:9000", "[fd00::4]:9000", ""], # an empty endpoint is skipped
  "": ["ignored:1"],
  "url//like": ["h:1"],
  "Empty": []
}`, map[string][]Member{
			"Cluster1":  {{ID: "node1:8080", Addr: "node1:8080", Cluster: "Cluster1"}, {ID: "node2:8080", Addr: "node2:8080", Cluster: "Cluster1"}},
			"Cluster2":  {{ID: "10.0.0.3:9000", Addr: "10.0.0.3:9000", Cluster: "Cluster2"}, {ID: "[fd00::4]:9000", Addr: "[fd00::4]:9000", Cluster: "Cluster2"}},
			"url//like": {{ID: "h:1", Addr: "h:1", Cluster: "url//like"}},
			"Empty":     {},
		}},
		{"bare host gets the default port", `{"c": ["node1"]}`, map[string][]Member{
			"c": {{ID: "node1:8080", Addr: "node1:8080", Cluster: "c"}}}},
		{"escaped quote in a name", `{"a\"#b": ["h:1"]}`, map[string][]Member{
			`a"#b`: {{ID: "h:1", Addr: "h:1", Cluster: `a"#b`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readClusters([]byte(tt.text), DefaultPort)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadClustersErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{``, "not NDBench's clusters.json"},
		{`null`, "not NDBench's clusters.json: null"},
		{`["a:1"]`, "not NDBench's clusters.json"},
		{`{"c": "a:1"}`, `cluster "c": want an array`},
		{`{"c": null}`, `cluster "c": want an array`},
		{`{"c": [1]}`, `cluster "c": want an array`},
		{`{"c": ["a:0"]}`, `cluster "c", endpoint 1`},
		{`{"c": ["a:1"]} {}`, "text after the object"},
		{`{"c": ["a:1"]} /* open`, "unterminated /* comment"},
		{`{"c": ["a:1",]}`, "not NDBench's clusters.json"}, // Gson makes that a null, which NDBench fails on
	}
	for _, tt := range tests {
		_, err := readClusters([]byte(tt.text), DefaultPort)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.text, err, tt.want)
		}
	}
}

func TestFileDiscovery(t *testing.T) {
	path := writeClusters(t, `{
  // a node in two clusters is one member
  "beta":  ["n2:8080", "n3:8080"],
  "alpha": ["n1:8080", "n2:8080"]
}`)
	d, err := Parse("file:"+path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := d.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Member{
		{ID: "n1:8080", Addr: "n1:8080", Cluster: "alpha"},
		{ID: "n2:8080", Addr: "n2:8080", Cluster: "alpha"},
		{ID: "n3:8080", Addr: "n3:8080", Cluster: "beta"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Members = %+v\nwant %+v", got, want)
	}
	clusters, err := Clusters(ctx, d, "unused")
	if err != nil {
		t.Fatal(err)
	}
	if len(clusters) != 2 || len(clusters["alpha"]) != 2 || len(clusters["beta"]) != 2 {
		t.Errorf("Clusters = %+v: want n2 in both", clusters)
	}

	// The file is read again on every call.
	if err := os.WriteFile(path, []byte(`{"gamma": ["n9:1"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = d.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Member{{ID: "n9:1", Addr: "n9:1", Cluster: "gamma"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("after rewrite: Members = %+v, want %+v", got, want)
	}

	// A broken file or a missing one is an error naming the source.
	if err := os.WriteFile(path, []byte(`{"gamma": "n9:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Members(ctx); err == nil || !strings.Contains(err.Error(), "file:"+path) || !strings.Contains(err.Error(), `cluster "gamma"`) {
		t.Errorf("broken file: error %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Members(ctx); err == nil || !strings.Contains(err.Error(), "file:"+path) {
		t.Errorf("missing file: error %v", err)
	}
}

func TestClustersGroupsOtherSources(t *testing.T) {
	d, err := Parse("static:a:1,b:2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Clusters(context.Background(), d, "fleet")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Member{"fleet": {{ID: "a:1", Addr: "a:1"}, {ID: "b:2", Addr: "b:2"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Clusters = %+v, want %+v", got, want)
	}
}
