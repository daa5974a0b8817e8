package kube

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The types below hold the fields deploy's tests read, with k8s.io/api's names and JSON
// tags; Check is what makes a render strict, so decoding into them is not.

// ObjectMeta is an object's metadata.
type ObjectMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Service is a v1 Service.
type Service struct {
	ObjectMeta `json:"metadata"`
	Spec       ServiceSpec `json:"spec"`
}

// ServiceSpec is a Service's spec.
type ServiceSpec struct {
	Type                     ServiceType       `json:"type,omitempty"`
	ClusterIP                string            `json:"clusterIP,omitempty"`
	Selector                 map[string]string `json:"selector,omitempty"`
	Ports                    []ServicePort     `json:"ports,omitempty"`
	PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses,omitempty"`
	SessionAffinity          ServiceAffinity   `json:"sessionAffinity,omitempty"`
}

// ServiceType is a Service's type.
type ServiceType string

// ServiceAffinity is a Service's session affinity.
type ServiceAffinity string

// Protocol is a port's protocol.
type Protocol string

// URIScheme is an HTTP probe's scheme.
type URIScheme string

// The values the tests compare with, as k8s.io/api names them.
const (
	ClusterIPNone                                    = "None"
	ServiceTypeClusterIP             ServiceType     = "ClusterIP"
	ServiceTypeLoadBalancer          ServiceType     = "LoadBalancer"
	ServiceAffinityClientIP          ServiceAffinity = "ClientIP"
	ProtocolTCP                      Protocol        = "TCP"
	URISchemeHTTPS                   URIScheme       = "HTTPS"
	SeccompProfileTypeRuntimeDefault                 = "RuntimeDefault"
)

// ServicePort is one port of a Service.
type ServicePort struct {
	Name       string      `json:"name,omitempty"`
	Protocol   Protocol    `json:"protocol,omitempty"`
	Port       int32       `json:"port"`
	TargetPort IntOrString `json:"targetPort,omitempty"`
}

// Secret is a v1 Secret.
type Secret struct {
	ObjectMeta `json:"metadata"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
}

// ConfigMap is a v1 ConfigMap.
type ConfigMap struct {
	ObjectMeta `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
}

// ServiceAccount is a v1 ServiceAccount.
type ServiceAccount struct {
	ObjectMeta `json:"metadata"`
}

// Pod is a v1 Pod.
type Pod struct {
	ObjectMeta `json:"metadata"`
	Spec       PodSpec `json:"spec"`
}

// StatefulSet is an apps/v1 StatefulSet.
type StatefulSet struct {
	ObjectMeta `json:"metadata"`
	Spec       StatefulSetSpec `json:"spec"`
}

// StatefulSetSpec is a StatefulSet's spec.
type StatefulSetSpec struct {
	Replicas    *int32          `json:"replicas,omitempty"`
	Selector    *LabelSelector  `json:"selector"`
	Template    PodTemplateSpec `json:"template"`
	ServiceName string          `json:"serviceName,omitempty"`
}

// Deployment is an apps/v1 Deployment.
type Deployment struct {
	ObjectMeta `json:"metadata"`
	Spec       DeploymentSpec `json:"spec"`
}

// DeploymentSpec is a Deployment's spec.
type DeploymentSpec struct {
	Replicas *int32          `json:"replicas,omitempty"`
	Selector *LabelSelector  `json:"selector"`
	Template PodTemplateSpec `json:"template"`
}

// LabelSelector selects objects by label.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// PodTemplateSpec is a workload's pod template.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

// PodSpec is a pod's spec.
type PodSpec struct {
	Volumes                      []Volume            `json:"volumes,omitempty"`
	Containers                   []Container         `json:"containers"`
	AutomountServiceAccountToken *bool               `json:"automountServiceAccountToken,omitempty"`
	SecurityContext              *PodSecurityContext `json:"securityContext,omitempty"`
	Affinity                     *Affinity           `json:"affinity,omitempty"`
	EnableServiceLinks           *bool               `json:"enableServiceLinks,omitempty"`
}

// Volume is a pod's volume.
type Volume struct {
	Name      string                 `json:"name"`
	Secret    *SecretVolumeSource    `json:"secret,omitempty"`
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
}

// SecretVolumeSource is a volume from a Secret.
type SecretVolumeSource struct {
	SecretName string `json:"secretName,omitempty"`
}

// ConfigMapVolumeSource is a volume from a ConfigMap.
type ConfigMapVolumeSource struct {
	Name string `json:"name,omitempty"`
}

// Container is a pod's container.
type Container struct {
	Name            string               `json:"name"`
	Args            []string             `json:"args,omitempty"`
	Ports           []ContainerPort      `json:"ports,omitempty"`
	Env             []EnvVar             `json:"env,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitempty"`
	VolumeMounts    []VolumeMount        `json:"volumeMounts,omitempty"`
	LivenessProbe   *Probe               `json:"livenessProbe,omitempty"`
	ReadinessProbe  *Probe               `json:"readinessProbe,omitempty"`
	SecurityContext *SecurityContext     `json:"securityContext,omitempty"`
}

// ContainerPort is a container's port.
type ContainerPort struct {
	Name          string   `json:"name,omitempty"`
	ContainerPort int32    `json:"containerPort"`
	Protocol      Protocol `json:"protocol,omitempty"`
}

// EnvVar is a container's environment variable.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where a variable's value comes from.
type EnvVarSource struct {
	FieldRef     *ObjectFieldSelector `json:"fieldRef,omitempty"`
	SecretKeyRef *SecretKeySelector   `json:"secretKeyRef,omitempty"`
}

// ObjectFieldSelector is a downward API field.
type ObjectFieldSelector struct {
	FieldPath string `json:"fieldPath"`
}

// SecretKeySelector is a key of a Secret.
type SecretKeySelector struct {
	Name string `json:"name,omitempty"`
	Key  string `json:"key"`
}

// VolumeMount mounts a volume into a container.
type VolumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath,omitempty"`
}

// Probe is a container's probe.
type Probe struct {
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
}

// HTTPGetAction is an HTTP probe.
type HTTPGetAction struct {
	Path   string      `json:"path,omitempty"`
	Port   IntOrString `json:"port"`
	Scheme URIScheme   `json:"scheme,omitempty"`
}

// ResourceRequirements are a container's requests and limits.
type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// ResourceList maps a resource name to its quantity.
type ResourceList map[string]Quantity

// Cpu is the list's cpu quantity (named as k8s.io/api names it).
func (r ResourceList) Cpu() Quantity { return r["cpu"] }

// Memory is the list's memory quantity.
func (r ResourceList) Memory() Quantity { return r["memory"] }

// Quantity is a resource quantity as written (Check validates its syntax).
type Quantity string

// UnmarshalJSON accepts a quantity as a string or a number, as the API does.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*q = Quantity(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*q = Quantity(n)
	return nil
}

// IsZero reports a missing quantity or one whose number is zero.
func (q Quantity) IsZero() bool {
	s := strings.TrimRight(strings.TrimSpace(string(q)), "KMGTPEimnuk")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	f, err := strconv.ParseFloat(s, 64)
	return err != nil || f == 0
}

// IntOrString is a port given by number or by name.
type IntOrString struct {
	IsString bool
	Int      int32
	Str      string
}

// UnmarshalJSON accepts a number or a string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsString = true
		return json.Unmarshal(b, &v.Str)
	}
	v.IsString = false
	return json.Unmarshal(b, &v.Int)
}

// String is the name, or the number in decimal.
func (v IntOrString) String() string {
	if v.IsString {
		return v.Str
	}
	return strconv.Itoa(int(v.Int))
}

// PodSecurityContext is a pod's security context.
type PodSecurityContext struct {
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// SeccompProfile is a seccomp profile.
type SeccompProfile struct {
	Type string `json:"type"`
}

// SecurityContext is a container's security context.
type SecurityContext struct {
	Capabilities             *Capabilities `json:"capabilities,omitempty"`
	RunAsNonRoot             *bool         `json:"runAsNonRoot,omitempty"`
	ReadOnlyRootFilesystem   *bool         `json:"readOnlyRootFilesystem,omitempty"`
	AllowPrivilegeEscalation *bool         `json:"allowPrivilegeEscalation,omitempty"`
}

// Capability is a Linux capability.
type Capability string

// Capabilities are the capabilities added and dropped.
type Capabilities struct {
	Add  []Capability `json:"add,omitempty"`
	Drop []Capability `json:"drop,omitempty"`
}

// Affinity is a pod's scheduling affinity.
type Affinity struct {
	PodAntiAffinity *PodAntiAffinity `json:"podAntiAffinity,omitempty"`
}

// PodAntiAffinity keeps pods apart.
type PodAntiAffinity struct {
	RequiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAffinityTerm is one anti-affinity rule.
type PodAffinityTerm struct {
	TopologyKey string `json:"topologyKey"`
}
