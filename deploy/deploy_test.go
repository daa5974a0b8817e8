//go:build integration

package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ndbench/ndbench/deploy/internal/kube"
	_ "github.com/ndbench/ndbench/drivers/memory" // the chart's default config uses it
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
)

const (
	chart     = "helm/ndbench"
	release   = "ndbench"
	namespace = "bench"
	port      = 8080
)

// helmBinary returns the helm that scripts/install-helm.sh installs (or $NDBENCH_HELM). A
// missing helm fails the test in CI (CI set) and skips it elsewhere, saying how to install it.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NDBENCH_HELM"); p != "" {
		return p
	}
	script, err := os.ReadFile("../scripts/install-helm.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^HELM_VERSION=(\S+)$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("no HELM_VERSION= line in scripts/install-helm.sh")
	}
	cache := os.Getenv("NDBENCH_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "ndbench")
	}
	p := filepath.Join(cache, "helm-"+string(m[1]), "bin", "helm")
	if _, err := os.Stat(p); err != nil {
		msg := fmt.Sprintf("helm %s is not installed (%v): run scripts/install-test-deps.sh or scripts/install-helm.sh", m[1], err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// template renders the chart as release "ndbench" in namespace "bench" with --set values.
func template(t *testing.T, sets ...string) string {
	args := []string{"template", release, chart, "--namespace", namespace}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return helm(t, args...)
}

// objects are the decoded objects of one render, by kind.
type objects struct {
	services     []*kube.Service
	secrets      []*kube.Secret
	configMaps   []*kube.ConfigMap
	accounts     []*kube.ServiceAccount
	pods         []*kube.Pod
	statefulSets []*kube.StatefulSet
	deployments  []*kube.Deployment
}

// decode splits a multi-document render and checks each object strictly against its
// Kubernetes API type (kube.Check: the field names and value types of k8s.io/api's Go
// types, case-sensitive, as the API server's strict decoding), after sigs.k8s.io/yaml to
// JSON (duplicate keys are errors), so a misspelt or misplaced field fails here rather than
// being dropped by the API server or kubectl. A kind the schema does not have fails.
func decode(t *testing.T, render string) objects {
	t.Helper()
	var objs objects
	n := 0
	for i, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(render, -1) {
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		if s := string(bytes.TrimSpace(j)); s == "null" || s == "" {
			continue // comments only
		}
		kind, err := kube.Check(j)
		if err != nil {
			t.Fatalf("document %d (%s) does not match the Kubernetes API type: %v\n%s", i, kind, err, doc)
		}
		var into any
		switch kind {
		case "v1 Service":
			into = appendNew(&objs.services)
		case "v1 Secret":
			into = appendNew(&objs.secrets)
		case "v1 ConfigMap":
			into = appendNew(&objs.configMaps)
		case "v1 ServiceAccount":
			into = appendNew(&objs.accounts)
		case "v1 Pod":
			into = appendNew(&objs.pods)
		case "apps/v1 StatefulSet":
			into = appendNew(&objs.statefulSets)
		case "apps/v1 Deployment":
			into = appendNew(&objs.deployments)
		default:
			t.Fatalf("document %d: kind %s has no type in this test; add it\n%s", i, kind, doc)
		}
		if err := json.Unmarshal(j, into); err != nil {
			t.Fatalf("document %d (%s): %v\n%s", i, kind, err, doc)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the render holds no object")
	}
	return objs
}

func appendNew[T any](s *[]*T) *T {
	v := new(T)
	*s = append(*s, v)
	return v
}

// podTemplate returns the one workload's pod template.
func (o objects) podTemplate(t *testing.T) kube.PodTemplateSpec {
	t.Helper()
	switch {
	case len(o.statefulSets) == 1 && len(o.deployments) == 0:
		return o.statefulSets[0].Spec.Template
	case len(o.deployments) == 1 && len(o.statefulSets) == 0:
		return o.deployments[0].Spec.Template
	}
	t.Fatalf("want one StatefulSet or Deployment, got %d and %d", len(o.statefulSets), len(o.deployments))
	return kube.PodTemplateSpec{}
}

// headless returns the Service with clusterIP None.
func (o objects) headless(t *testing.T) *kube.Service {
	t.Helper()
	var found []*kube.Service
	for _, s := range o.services {
		if s.Spec.ClusterIP == kube.ClusterIPNone {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one headless Service (clusterIP: None), got %d", len(found))
	}
	return found[0]
}

// argAfter returns the argument after flag, failing when flag is absent.
func argAfter(t *testing.T, args []string, flag string) string {
	t.Helper()
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("args %q have no %s VALUE", args, flag)
	}
	return args[i+1]
}

func envVar(t *testing.T, c kube.Container, name string) kube.EnvVar {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("container %s has no env %s", c.Name, name)
	return kube.EnvVar{}
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestLint(t *testing.T) {
	helm(t, "lint", "--strict", chart)
	helm(t, "lint", "--strict", chart, "--set", "kind=Deployment", "--set", "etcd.endpoints=etcd:2379",
		"--set", "etcd.config.enabled=true", "--set", "token.existingSecret=my-token")
}

// checkNode asserts what every node's pod must have, whatever the values: what a user
// deploying it would check by hand.
func checkNode(t *testing.T, o objects, secretName, secretKey string) kube.Container {
	t.Helper()
	tpl := o.podTemplate(t)
	spec := tpl.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]

	if c.Args[0] != "serve" {
		t.Errorf("args %q do not start with serve", c.Args)
	}
	// Every flag the chart passes is one `ndbench serve` has: a renamed flag would make
	// every pod exit at start.
	known := serveFlags(t)
	for _, a := range c.Args {
		if name, _, _ := strings.Cut(a, "="); strings.HasPrefix(name, "--") && !known[name] {
			t.Errorf("the chart passes %s, which ndbench serve does not have", name)
		}
	}
	if got := argAfter(t, c.Args, "--listen"); got != fmt.Sprintf("0.0.0.0:%d", port) {
		t.Errorf("--listen %s", got)
	}
	if got := argAfter(t, c.Args, "--node-id"); got != "$(POD_NAME)" {
		t.Errorf("--node-id %s, want $(POD_NAME)", got)
	}
	if got := argAfter(t, c.Args, "--advertise"); got != fmt.Sprintf("$(POD_IP):%d", port) {
		t.Errorf("--advertise %s, want $(POD_IP):%d", got, port)
	}
	if e := envVar(t, c, "POD_NAME"); e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME is not the downward API's metadata.name: %+v", e)
	}
	if e := envVar(t, c, "POD_IP"); e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("POD_IP is not the downward API's status.podIP: %+v", e)
	}

	// The token: from a Secret, never a literal.
	tok := envVar(t, c, "NDBENCH_TOKEN")
	if tok.Value != "" || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil {
		t.Fatalf("NDBENCH_TOKEN does not come from a secretKeyRef: %+v", tok)
	}
	if ref := tok.ValueFrom.SecretKeyRef; ref.Name != secretName || ref.Key != secretKey {
		t.Errorf("NDBENCH_TOKEN from secret %s key %s, want %s key %s", ref.Name, ref.Key, secretName, secretKey)
	}
	// Kubernetes' service links would add NDBENCH_SERVICE_HOST and the like for a Service
	// named ndbench: unknown NDBENCH_* variables make ndbench exit with status 2.
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks is not false")
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "NDBENCH_") && e.Name != "NDBENCH_TOKEN" {
			t.Errorf("env %s would be read as configuration", e.Name)
		}
	}

	// Config from the ConfigMap, mounted as a directory (a subPath mount never sees updates).
	if got := argAfter(t, c.Args, "-c"); got != "/etc/ndbench/ndbench.yaml" {
		t.Errorf("-c %s", got)
	}
	var mounted string
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/etc/ndbench" && m.SubPath == "" {
			mounted = m.Name
		}
	}
	var cmName string
	for _, v := range spec.Volumes {
		if v.Name == mounted && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	var cm *kube.ConfigMap
	for _, m := range o.configMaps {
		if m.Name == cmName {
			cm = m
		}
	}
	if cm == nil {
		t.Fatalf("/etc/ndbench is not a rendered ConfigMap mounted without subPath (volume %q, configMap %q)", mounted, cmName)
	}
	yml, ok := cm.Data["ndbench.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no ndbench.yaml", cm.Name)
	}
	// What ndbench itself would say of the file: it exits with status 2 on a bad config.
	f := filepath.Join(t.TempDir(), "ndbench.yaml")
	if err := os.WriteFile(f, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := source.Load(f, config.Sources{}); err != nil {
		t.Errorf("ConfigMap %s's ndbench.yaml is not a valid ndbench configuration: %v\n%s", cm.Name, err, yml)
	}

	// Non-root, read-only, no capabilities, RuntimeDefault seccomp.
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("no pod or container securityContext")
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("runAsNonRoot is not true on the pod and the container")
	}
	if psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("runAsUser is not a non-root uid")
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != kube.SeccompProfileTypeRuntimeDefault {
		t.Error("seccompProfile is not RuntimeDefault")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []kube.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities are not drop ALL: %+v", sc.Capabilities)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the service account token is mounted; nodes call no Kubernetes API")
	}

	// Probes on /health through the named port, which is the Services' target.
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != port {
		t.Errorf("container ports %+v, want http %d", c.Ports, port)
	}
	for name, p := range map[string]*kube.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe is not GET /health on port http: %+v", name, p)
		}
	}

	// TLS, unless the values said insecure: the certificate from the TLS Secret's files,
	// the nodes' certificates checked against its CA, probes over https, and no
	// --insecure-* flag.
	insecure := slices.Contains(c.Args, "--insecure-listen")
	if insecure != slices.Contains(c.Args, "--insecure-peers") || insecure == slices.Contains(c.Args, "--tls-cert") {
		t.Errorf("args %q: want either TLS (--tls-cert, --peer-ca) or both --insecure-listen and --insecure-peers", c.Args)
	}
	if !insecure {
		for flag, want := range map[string]string{"--tls-cert": "/etc/ndbench-tls/tls.crt", "--tls-key": "/etc/ndbench-tls/tls.key", "--peer-ca": "/etc/ndbench-tls/ca.crt"} {
			if got := argAfter(t, c.Args, flag); got != want {
				t.Errorf("%s %s, want %s", flag, got, want)
			}
		}
		for name, p := range map[string]*kube.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Scheme != kube.URISchemeHTTPS {
				t.Errorf("%s probe over %q, want HTTPS", name, p.HTTPGet.Scheme)
			}
		}
		var mounted, fromSecret bool
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == "tls" && m.MountPath == "/etc/ndbench-tls" && m.ReadOnly
		}
		for _, v := range spec.Volumes {
			fromSecret = fromSecret || v.Name == "tls" && v.Secret != nil && v.Secret.SecretName != ""
		}
		if !mounted || !fromSecret {
			t.Errorf("the TLS Secret is not mounted read-only at /etc/ndbench-tls: mounts %+v, volumes %+v", c.VolumeMounts, spec.Volumes)
		}
	}

	// Prometheus scrape annotations on the pods.
	want := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": fmt.Sprint(port), "prometheus.io/path": "/metrics"}
	for k, v := range want {
		if tpl.Annotations[k] != v {
			t.Errorf("pod annotation %s=%q, want %q", k, tpl.Annotations[k], v)
		}
	}

	// Resources: requests, and a memory limit.
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v lack cpu/memory requests or a memory limit", c.Resources)
	}

	// Both Services select the nodes and target the named port.
	for _, s := range o.services {
		if !selects(s.Spec.Selector, tpl.Labels) && s.Spec.Selector["statefulset.kubernetes.io/pod-name"] == "" {
			t.Errorf("Service %s does not select the nodes: selector %v, pod labels %v", s.Name, s.Spec.Selector, tpl.Labels)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "http" || s.Spec.Ports[0].TargetPort.String() != "http" {
			t.Errorf("Service %s ports %+v, want one named http targeting http", s.Name, s.Spec.Ports)
		}
	}
	if len(o.services) != 2 {
		t.Errorf("want 2 Services (headless, control point), got %d", len(o.services))
	}
	return c
}

func TestDefaults(t *testing.T) {
	o := decode(t, template(t))
	h := o.headless(t)
	if !h.Spec.PublishNotReadyAddresses {
		t.Error("the headless Service does not publish not-ready addresses: nodes could not find each other before they are ready")
	}
	if p := h.Spec.Ports; len(p) != 1 || p[0].Name != "http" || p[0].Port != port || p[0].Protocol != kube.ProtocolTCP {
		t.Errorf("headless Service ports %+v: want one TCP port named http (SRV _http._tcp) on %d", p, port)
	}
	if len(o.statefulSets) != 1 {
		t.Fatalf("the default kind is not one StatefulSet: %d", len(o.statefulSets))
	}
	ss := o.statefulSets[0]
	if ss.Spec.ServiceName != h.Name {
		t.Errorf("StatefulSet serviceName %q, want the headless Service %q", ss.Spec.ServiceName, h.Name)
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas < 1 {
		t.Errorf("replicas %v", ss.Spec.Replicas)
	}
	if !selects(ss.Spec.Selector.MatchLabels, ss.Spec.Template.Labels) {
		t.Errorf("StatefulSet selector %v does not match its pods %v", ss.Spec.Selector.MatchLabels, ss.Spec.Template.Labels)
	}

	if len(o.secrets) != 1 {
		t.Fatalf("want the token Secret, got %d Secrets", len(o.secrets))
	}
	sec := o.secrets[0]
	if tok := sec.StringData["token"]; len(tok) < 32 {
		t.Errorf("the generated token is %d characters", len(tok))
	}
	c := checkNode(t, o, sec.Name, "token")

	fqdn := fmt.Sprintf("%s.%s.svc.cluster.local", h.Name, namespace)
	if got, want := argAfter(t, c.Args, "--discovery"), fmt.Sprintf("dns:%s:%d", fqdn, port); got != want {
		t.Errorf("--discovery %s, want %s (the headless Service)", got, want)
	}
	if slices.Contains(c.Args, "--config-etcd") || slices.Contains(c.Args, "--discovery-prefix") {
		t.Errorf("etcd flags without etcd: %q", c.Args)
	}

	// The control point: node 0 alone, so a browser session and a fleet run stay on it.
	var ctl *kube.Service
	for _, s := range o.services {
		if s != h {
			ctl = s
		}
	}
	if ctl.Spec.Type != kube.ServiceTypeClusterIP {
		t.Errorf("control Service type %s", ctl.Spec.Type)
	}
	if got := ctl.Spec.Selector["statefulset.kubernetes.io/pod-name"]; got != ss.Name+"-0" {
		t.Errorf("control Service selects pod %q, want %s-0", got, ss.Name)
	}

	// TLS by default, from the Secret cert-manager's names fit, without mutual TLS.
	if v := tlsVolume(ss.Spec.Template.Spec); v == nil || v.Secret.SecretName != "ndbench-tls" {
		t.Errorf("the default TLS Secret is not ndbench-tls: %+v", v)
	}
	if slices.Contains(c.Args, "--tls-client-ca") {
		t.Error("mutual TLS by default: browsers would need client certificates")
	}

	// helm test's pod checks the Service and the token.
	if len(o.pods) != 1 || o.pods[0].Annotations["helm.sh/hook"] != "test" {
		t.Errorf("want one helm test pod, got %d", len(o.pods))
	}
}

func TestVariant(t *testing.T) {
	o := decode(t, template(t, "kind=Deployment", "replicas=5",
		"etcd.endpoints=http://etcd-0:2379\\,http://etcd-1:2379", "etcd.config.enabled=true",
		"etcd.config.prefix=/ndbench/nodes/$(POD_NAME)/",
		"token.existingSecret=my-token", "token.key=api-token",
		"nodeLabels.zone=us-east-1a", "nodeLabels.rack=r1",
		"service.type=LoadBalancer", "podAntiAffinity=hard", "tests.enabled=false",
		"config.driver.name=memory", "config.workload.readRate=5000", "tls.secretName=my-tls", "tls.clientAuth=true"))
	if len(o.deployments) != 1 || *o.deployments[0].Spec.Replicas != 5 {
		t.Fatalf("want one Deployment of 5, got %d Deployments", len(o.deployments))
	}
	if len(o.secrets) != 0 {
		t.Errorf("an existing Secret is named, yet %d Secrets are rendered", len(o.secrets))
	}
	if len(o.pods) != 0 {
		t.Error("tests.enabled=false renders a test pod")
	}
	c := checkNode(t, o, "my-token", "api-token")
	o.headless(t)
	for flag, want := range map[string]string{
		"--discovery":        "etcd:http://etcd-0:2379,http://etcd-1:2379",
		"--discovery-prefix": "/ndbench/members/",
		"--config-etcd":      "http://etcd-0:2379,http://etcd-1:2379",
		"--config-prefix":    "/ndbench/nodes/$(POD_NAME)/",
		"--labels":           "rack=r1,zone=us-east-1a",
	} {
		if got := argAfter(t, c.Args, flag); got != want {
			t.Errorf("%s %s, want %s", flag, got, want)
		}
	}
	if got := argAfter(t, c.Args, "--tls-client-ca"); got != "/etc/ndbench-tls/ca.crt" {
		t.Errorf("tls.clientAuth: --tls-client-ca %s, want the Secret's ca.crt", got)
	}
	if v := tlsVolume(o.deployments[0].Spec.Template.Spec); v == nil || v.Secret.SecretName != "my-tls" {
		t.Errorf("tls.secretName=my-tls mounts %+v", v)
	}
	for _, s := range o.services {
		if s.Spec.ClusterIP == kube.ClusterIPNone {
			continue
		}
		if s.Spec.Type != kube.ServiceTypeLoadBalancer || s.Spec.SessionAffinity != kube.ServiceAffinityClientIP {
			t.Errorf("control Service type %s affinity %s, want LoadBalancer with ClientIP affinity", s.Spec.Type, s.Spec.SessionAffinity)
		}
		if _, ok := s.Spec.Selector["statefulset.kubernetes.io/pod-name"]; ok {
			t.Error("a Deployment's control Service selects a StatefulSet pod name")
		}
	}
	aff := o.deployments[0].Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("podAntiAffinity=hard gives %+v", aff)
	}
}

// tlsVolume is the pod's volume of the TLS Secret, nil without one.
func tlsVolume(spec kube.PodSpec) *kube.Volume {
	for i, v := range spec.Volumes {
		if v.Name == "tls" && v.Secret != nil {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// TestInsecure: plain http only when the values say so, and then both ways (API and
// peers), probes and helm's test over http, no TLS Secret.
func TestInsecure(t *testing.T) {
	o := decode(t, template(t, "tls.enabled=false", "insecure=true"))
	c := checkNode(t, o, o.secrets[0].Name, "token")
	if !slices.Contains(c.Args, "--insecure-listen") || slices.Contains(c.Args, "--tls-cert") {
		t.Errorf("insecure=true: args %q", c.Args)
	}
	if v := tlsVolume(o.statefulSets[0].Spec.Template.Spec); v != nil {
		t.Errorf("TLS off, yet the Secret is mounted: %+v", v)
	}
	if p := c.ReadinessProbe; p.HTTPGet.Scheme == kube.URISchemeHTTPS {
		t.Error("TLS off, yet the probe is over https")
	}
}

// TestBadValues: values the chart cannot honour fail the render with a message, from
// values.schema.json (a misspelt value name too) or, when helm skips the schema, from the
// templates.
func TestBadValues(t *testing.T) {
	for _, c := range []struct{ set, want, wantNoSchema string }{
		{"kind=Job", "at '/kind': value must be one of 'StatefulSet', 'Deployment'", "kind must be StatefulSet or Deployment"},
		{"podAntiAffinity=always", "at '/podAntiAffinity': value must be one of", "podAntiAffinity must be soft, hard"},
		{"replica=5", "additional properties 'replica' not allowed", ""},
		{"etcd.config.enabled=true", "etcd.config.enabled needs etcd.endpoints", "etcd.config.enabled needs etcd.endpoints"},
		{"tls.enabled=false", "tls.enabled is false: set insecure=true", "tls.enabled is false: set insecure=true"},
		{"tls.clientauth=true", "additional properties 'clientauth' not allowed", ""},
	} {
		for _, schema := range []bool{true, false} {
			args := []string{"template", release, chart, "--set", c.set}
			want := c.want
			if !schema {
				args, want = append(args, "--skip-schema-validation"), c.wantNoSchema
			}
			if want == "" {
				continue
			}
			out, err := exec.Command(helmBinary(t), args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), want) {
				t.Errorf("helm %s: err %v, output %s; want a failure saying %q", strings.Join(args, " "), err, out, want)
			}
		}
	}
}

// TestManifests: deploy/kubernetes/ndbench.yaml is what scripts/render-manifests.sh (make
// manifests) renders now, its objects are valid, and its token Secret is the empty
// placeholder, never a token everyone who applies the file would share.
func TestManifests(t *testing.T) {
	cmd := exec.Command("bash", "../scripts/render-manifests.sh")
	cmd.Env = append(os.Environ(), "HELM="+helmBinary(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	fresh, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/render-manifests.sh: %v\n%s", err, stderr.String())
	}
	committed, err := os.ReadFile("kubernetes/ndbench.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Errorf("deploy/kubernetes/ndbench.yaml is stale: run make manifests and commit it")
	}
	o := decode(t, string(committed))
	if len(o.secrets) != 1 || o.secrets[0].StringData["token"] != "" || len(o.secrets[0].Data) != 0 {
		t.Fatalf("the manifests' Secret is not the empty placeholder: %+v", o.secrets)
	}
	if !strings.Contains(string(committed), "# REPLACE the empty token") {
		t.Error("the placeholder Secret is not marked REPLACE")
	}
	if len(o.pods) != 0 {
		t.Error("the manifests hold helm's test pod")
	}
	c := checkNode(t, o, o.secrets[0].Name, "token")
	if got := argAfter(t, c.Args, "--discovery"); got != "dns:ndbench-headless.default.svc.cluster.local:8080" {
		t.Errorf("--discovery %s", got)
	}
}

// TestDockerfile: the image's user and port are the ones the chart runs with.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	stages := strings.Split(df, "\nFROM ")
	final := stages[len(stages)-1]
	for _, want := range []string{"USER 65532:65532", fmt.Sprintf("EXPOSE %d", port), `ENTRYPOINT ["/ndbench"]`,
		fmt.Sprintf(`CMD ["serve", "--listen", "0.0.0.0:%d", "--tls-cert", "/etc/ndbench-tls/tls.crt", "--tls-key", "/etc/ndbench-tls/tls.key"]`, port)} {
		if !strings.Contains(final, "\n"+want+"\n") {
			t.Errorf("the Dockerfile's final stage has no line %s", want)
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/ndbench"} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile's build has no %s", want)
		}
	}
	tpl := decode(t, template(t)).podTemplate(t)
	if u := tpl.Spec.SecurityContext.RunAsUser; u == nil || *u != 65532 {
		t.Errorf("the chart runs as uid %v, the image's user is 65532", u)
	}
}

var serveFlagsOnce = sync.OnceValues(func() (map[string]bool, error) {
	cmd := exec.Command("go", "run", "github.com/ndbench/ndbench/cmd/ndbench", "serve", "--help")
	// make integration builds ndbench once for every package (testserver.NdbenchBinEnv);
	// go run would link another.
	if bin := os.Getenv("TEST_NDBENCH_BIN"); bin != "" {
		cmd = exec.Command(bin, "serve", "--help")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ndbench serve --help: %w: %s", err, out)
	}
	flags := map[string]bool{}
	for _, f := range regexp.MustCompile(`--[a-z][a-z-]*`).FindAllString(string(out), -1) {
		flags[f] = true
	}
	return flags, nil
})

// serveFlags returns the flags of `ndbench serve`, from its own --help.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	flags, err := serveFlagsOnce()
	if err != nil {
		t.Fatal(err)
	}
	return flags
}
