// Command schemagen writes deploy/internal/kube/schema.json: the field names and value
// types of the Kubernetes API objects the Helm chart renders, read by reflection from
// k8s.io/api's Go types (the API server's own), so deploy's tests check a render strictly
// against the API without compiling k8s.io/api into the ndbench module: its compile, plain
// and again under -race, cost a fresh CI run about a minute of CPU (docs/performance.md,
// "CI time").
//
// It is a module of its own, so ./... of the ndbench module never builds it. Run it after
// moving the k8s.io/api version below (go.mod) or when the chart renders a new kind (add
// it to kinds):
//
//	cd deploy/internal/kube/schemagen && go run . > ../schema.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kinds are the objects the chart renders, by "apiVersion kind".
var kinds = map[string]any{
	"v1 Service":          corev1.Service{},
	"v1 Secret":           corev1.Secret{},
	"v1 ConfigMap":        corev1.ConfigMap{},
	"v1 ServiceAccount":   corev1.ServiceAccount{},
	"v1 Pod":              corev1.Pod{},
	"apps/v1 StatefulSet": appsv1.StatefulSet{},
	"apps/v1 Deployment":  appsv1.Deployment{},
}

// special are the types that decode themselves (json.Unmarshaler): what JSON each accepts.
var special = map[reflect.Type]string{
	reflect.TypeFor[resource.Quantity]():    "quantity",
	reflect.TypeFor[intstr.IntOrString]():   "int-or-string",
	reflect.TypeFor[metav1.Time]():          "time",
	reflect.TypeFor[metav1.MicroTime]():     "time",
	reflect.TypeFor[metav1.Duration]():      "string",
	reflect.TypeFor[runtime.RawExtension](): "any",
	reflect.TypeFor[metav1.FieldsV1]():      "any",
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

type schema struct {
	Version string                       `json:"k8sApi"`
	Kinds   map[string]string            `json:"kinds"`
	Types   map[string]map[string]string `json:"types"`
}

func main() {
	s := schema{Version: apiVersion(), Kinds: map[string]string{}, Types: map[string]map[string]string{}}
	for k, v := range kinds {
		s.Kinds[k] = s.ref(reflect.TypeOf(v))
	}
	out, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(append(out, '\n'))
}

// ref returns the type expression of t: a primitive, "[]X", "map[]X", a special, or the
// name of a struct in Types (added with its fields).
func (s *schema) ref(t reflect.Type) string {
	if sp, ok := special[t]; ok {
		return sp
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.ref(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16, reflect.Int8,
		reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		return t.Kind().String()
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Interface:
		return "any"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes" // base64, as encoding/json decodes []byte
		}
		return "[]" + s.ref(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("%v: map key %v", t, t.Key()))
		}
		return "map[]" + s.ref(t.Elem())
	case reflect.Struct:
		if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
			panic(fmt.Sprintf("%v decodes itself: say in special what JSON it accepts", t))
		}
		name := strings.TrimPrefix(t.PkgPath(), "k8s.io/") + "." + t.Name()
		if _, done := s.Types[name]; !done {
			fields := map[string]string{}
			s.Types[name] = fields
			s.fields(t, fields)
		}
		return name
	}
	panic(fmt.Sprintf("%v: kind %v", t, t.Kind()))
}

// fields adds t's JSON fields, those of inlined (embedded) structs included, as
// encoding/json sees them.
func (s *schema) fields(t reflect.Type, into map[string]string) {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			s.fields(ft, into)
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = s.ref(f.Type)
	}
}

// apiVersion is k8s.io/api's version in this build, recorded in the schema.
func apiVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/api" {
				return d.Version
			}
		}
	}
	return "unknown"
}
