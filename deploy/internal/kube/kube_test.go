package kube

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// A StatefulSet as the chart renders one, cut down.
const statefulSet = `{"apiVersion": "apps/v1", "kind": "StatefulSet",
 "metadata": {"name": "ndbench", "labels": {"app.kubernetes.io/name": "ndbench"}},
 "spec": {"replicas": 3, "serviceName": "ndbench-headless",
  "selector": {"matchLabels": {"app": "ndbench"}},
  "template": {"metadata": {"labels": {"app": "ndbench"}},
   "spec": {"enableServiceLinks": false, "securityContext": {"runAsUser": 65532},
    "containers": [{"name": "ndbench", "args": ["serve"],
     "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
     "readinessProbe": {"httpGet": {"path": "/health", "port": "http", "scheme": "HTTPS"}},
     "resources": {"limits": {"memory": "2Gi"}, "requests": {"cpu": "500m", "memory": 1073741824}}}],
    "volumes": [{"name": "tls", "secret": {"secretName": "ndbench-tls", "defaultMode": 288}}]}}}}`

func TestCheckAcceptsAValidObject(t *testing.T) {
	kind, err := Check([]byte(statefulSet))
	if err != nil || kind != "apps/v1 StatefulSet" {
		t.Fatalf("Check: %q, %v", kind, err)
	}
	var ss StatefulSet
	if err := json.Unmarshal([]byte(statefulSet), &ss); err != nil {
		t.Fatal(err)
	}
	c := ss.Spec.Template.Spec.Containers[0]
	if *ss.Spec.Replicas != 3 || c.ReadinessProbe.HTTPGet.Port.String() != "http" || c.Resources.Requests.Cpu() != "500m" ||
		c.Resources.Requests.Memory().IsZero() || *ss.Spec.Template.Spec.SecurityContext.RunAsUser != 65532 {
		t.Errorf("decoded %+v", ss)
	}
}

// Each mistake the API server's strict decoding refuses is refused, with its path.
func TestCheckRefusesWhatTheAPIRefuses(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{`"serviceName"`, `"servicename"`, `spec: unknown field "servicename" in api/apps/v1.StatefulSetSpec`},
		{`"enableServiceLinks"`, `"enableServiceLink"`, `spec.template.spec: unknown field "enableServiceLink"`},
		{`"containerPort": 8080`, `"containerport": 8080`, `unknown field "containerport"`},
		{`"replicas": 3`, `"replicas": "3"`, `spec.replicas: string "3", want an integer of type int32`},
		{`"replicas": 3`, `"replicas": 3.5`, `spec.replicas: number 3.5, want an integer of type int32`},
		{`"containerPort": 8080`, `"containerPort": 4294967296`, `containers[0].ports[0].containerPort: number 4294967296, want an integer of type int32`},
		{`"enableServiceLinks": false`, `"enableServiceLinks": "false"`, `enableServiceLinks: string "false", want true or false`},
		{`"memory": "2Gi"`, `"memory": "2 GB"`, `resources.limits["memory"]: string "2 GB", want a quantity`},
		{`"port": "http"`, `"port": true`, `httpGet.port: true, want an integer or a string`},
		{`"args": ["serve"]`, `"args": "serve"`, `containers[0].args: string "serve", want a list`},
		{`"labels": {"app": "ndbench"}`, `"labels": {"app": 1}`, `template.metadata.labels["app"]: number 1, want a string`},
		{`"kind": "StatefulSet"`, `"kind": "StatefulSets"`, `kind "StatefulSets" of apiVersion "apps/v1" is not in the schema`},
	} {
		bad := strings.Replace(statefulSet, c.from, c.to, 1)
		if bad == statefulSet {
			t.Fatalf("%s is not in the object", c.from)
		}
		_, err := Check([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: err %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

// Every field the read types decode is one the schema has: a misspelt tag would read
// nothing and let a test pass on a zero value.
func TestReadTypesAreTheSchemas(t *testing.T) {
	for kind, v := range map[string]any{
		"v1 Service": Service{}, "v1 Secret": Secret{}, "v1 ConfigMap": ConfigMap{}, "v1 ServiceAccount": ServiceAccount{},
		"v1 Pod": Pod{}, "apps/v1 StatefulSet": StatefulSet{}, "apps/v1 Deployment": Deployment{},
	} {
		compare(t, reflect.TypeOf(v), theSchema.Kinds[kind], kind)
	}
}

func compare(t *testing.T, rt reflect.Type, typ, path string) {
	t.Helper()
	for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
		if rt.Kind() == reflect.Slice && rt.Elem().Kind() == reflect.Uint8 {
			break
		}
		prefix := map[reflect.Kind]string{reflect.Slice: "[]", reflect.Map: "map[]"}[rt.Kind()]
		if !strings.HasPrefix(typ, prefix) {
			t.Errorf("%s: Go type %v, schema type %s", path, rt, typ)
			return
		}
		typ, rt = typ[len(prefix):], rt.Elem()
	}
	if rt.Kind() != reflect.Struct || rt == reflect.TypeFor[IntOrString]() {
		return
	}
	fields, ok := theSchema.Types[typ]
	if !ok {
		t.Errorf("%s: Go struct %v, schema type %s", path, rt, typ)
		return
	}
	for f := range rt.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous {
			compare(t, f.Type, fields[name], path+"."+name)
			continue
		}
		ft, ok := fields[name]
		if !ok {
			t.Errorf("%s: field %s (json %q) is not in schema type %s", path, f.Name, name, typ)
			continue
		}
		compare(t, f.Type, ft, path+"."+name)
	}
}

// The committed manifests (the chart rendered with its defaults) fit the schema.
func TestManifestsFit(t *testing.T) {
	b, err := os.ReadFile("../../kubernetes/ndbench.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(b), -1) {
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSpace(string(j)); s == "null" || s == "" {
			continue
		}
		if kind, err := Check(j); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		n++
	}
	if n < 6 {
		t.Errorf("%d objects in the manifests", n)
	}
}
