package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// fileSource reads NDBench's clusters.json on every call.
type fileSource struct {
	noClose
	path string
	port int // for endpoints without a port
}

// newFile names the file; it is read on each Members call, so it may not exist yet.
func newFile(path string, opts Options) *fileSource {
	return &fileSource{path: strings.TrimSpace(path), port: opts.DefaultPort}
}

// String returns file:PATH.
func (f *fileSource) String() string { return "file:" + f.path }

// Members returns every node of every cluster once, sorted by ID; a node listed in
// several clusters carries the first cluster's name in name order.
func (f *fileSource) Members(ctx context.Context) ([]Member, error) {
	clusters, err := f.Clusters(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(clusters))
	for name := range clusters {
		names = append(names, name)
	}
	slices.Sort(names)
	var ms []Member
	for _, name := range names {
		ms = append(ms, clusters[name]...)
	}
	return sortMembers(ms), nil
}

// Clusters reads the file and returns the members of each cluster, sorted by ID.
func (f *fileSource) Clusters(ctx context.Context) (map[string][]Member, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("discover members (%s): %w", f, err)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("discover members (%s): %w", f, err)
	}
	clusters, err := readClusters(data, f.port)
	if err != nil {
		return nil, fmt.Errorf("discover members (%s): %w", f, err)
	}
	return clusters, nil
}

// readClusters parses NDBench's clusters.json, the file ConfigFileDiscovery reads
// (Netflix/ndbench, ndbench-core/src/main/java/com/netflix/ndbench/core/discovery/
// ConfigFileDiscovery.java; the sample shipped as ndbench-core/src/main/resources/
// clusters.json):
//
//	{
//	  "localhost": ["localhost:8080"]
//	  //"Cluster1": ["Node1:8080","Node2:8080"]
//	}
//
// One JSON object; each name is a cluster, its value an array of "host:port" strings, the
// endpoints of that cluster's NDBench nodes. As in NDBench, a cluster with an empty name
// and empty endpoint strings are skipped. NDBench parses the file with Gson's lenient
// parser, and its own sample has a // comment, so comments are accepted here too: //
// and # to the end of the line, /* ... */. Gson's other leniencies (unquoted or
// single-quoted strings) are not. An endpoint without a port gets port (the default port);
// a cluster whose value is not an array of strings is an error, as it is in NDBench.
func readClusters(data []byte, port int) (map[string][]Member, error) {
	clean, err := stripComments(data)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(clean))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf(`not NDBench's clusters.json (want {"cluster": ["host:port", ...], ...}): %v`, err)
	}
	if raw == nil {
		return nil, errors.New(`not NDBench's clusters.json: null (want {"cluster": ["host:port", ...], ...})`)
	}
	if dec.More() {
		return nil, errors.New("not NDBench's clusters.json: text after the object")
	}
	out := make(map[string][]Member, len(raw))
	for name, value := range raw {
		if name == "" {
			continue
		}
		var endpoints []string
		if err := json.Unmarshal(value, &endpoints); err != nil || endpoints == nil {
			return nil, fmt.Errorf("cluster %q: want an array of \"host:port\" strings", name)
		}
		ms := []Member{}
		for i, ep := range endpoints {
			if strings.TrimSpace(ep) == "" {
				continue
			}
			addr, err := hostPort(ep, port)
			if err != nil {
				return nil, fmt.Errorf("cluster %q, endpoint %d: %v", name, i+1, err)
			}
			ms = append(ms, Member{ID: addr, Addr: addr, Cluster: name})
		}
		out[name] = sortMembers(ms)
	}
	return out, nil
}

// stripComments blanks out //, # and /* */ comments outside JSON strings, keeping line
// breaks so that decoding errors still point at the right place.
func stripComments(data []byte) ([]byte, error) {
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '#' || c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				out = append(out, ' ')
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return nil, errors.New("not NDBench's clusters.json: unterminated /* comment")
			}
			for _, b := range data[i : i+2+end+2] {
				if b == '\n' {
					out = append(out, '\n')
				} else {
					out = append(out, ' ')
				}
			}
			i += 2 + end + 1
		default:
			out = append(out, c)
		}
	}
	return out, nil
}
