package chartcheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// Rendered is one `helm template` output, decoded.
type Rendered struct {
	Name string // the values file it came from, e.g. "cluster-values"

	Deployments     map[string]*appsv1.Deployment
	Services        map[string]*corev1.Service
	ConfigMaps      map[string]*corev1.ConfigMap
	Secrets         map[string]*corev1.Secret
	ServiceAccounts map[string]*corev1.ServiceAccount
	PDBs            map[string]*policyv1.PodDisruptionBudget
	HPAs            map[string]*autoscalingv2.HorizontalPodAutoscaler
	NetworkPolicies map[string]*networkingv1.NetworkPolicy
	ScaledObjects   map[string]*kedav1alpha1.ScaledObject
	TriggerAuths    map[string]*kedav1alpha1.TriggerAuthentication
	ServiceMonitors map[string]*monitoringv1.ServiceMonitor
	PrometheusRules map[string]*monitoringv1.PrometheusRule
	Ingresses       map[string]*networkingv1.Ingress
	TestPods        map[string]*corev1.Pod // `helm test` hooks: the only Pods the chart renders
}

// typeMeta is what every object starts with.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// LoadDir decodes every *.yaml in dir, sorted by name.
func LoadDir(dir string) ([]*Rendered, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no rendered *.yaml in %s", dir)
	}
	sort.Strings(files)
	var out []*Rendered
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r, err := Decode(strings.TrimSuffix(filepath.Base(f), ".yaml"), data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Decode splits a multi-document stream and decodes each object strictly
// into its Go type: a field the type does not have, a duplicate key or a
// kind this chart should not render is an error.
func Decode(name string, stream []byte) (*Rendered, error) {
	r := &Rendered{
		Name:            name,
		Deployments:     map[string]*appsv1.Deployment{},
		Services:        map[string]*corev1.Service{},
		ConfigMaps:      map[string]*corev1.ConfigMap{},
		Secrets:         map[string]*corev1.Secret{},
		ServiceAccounts: map[string]*corev1.ServiceAccount{},
		PDBs:            map[string]*policyv1.PodDisruptionBudget{},
		HPAs:            map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		NetworkPolicies: map[string]*networkingv1.NetworkPolicy{},
		ScaledObjects:   map[string]*kedav1alpha1.ScaledObject{},
		TriggerAuths:    map[string]*kedav1alpha1.TriggerAuthentication{},
		ServiceMonitors: map[string]*monitoringv1.ServiceMonitor{},
		PrometheusRules: map[string]*monitoringv1.PrometheusRule{},
		Ingresses:       map[string]*networkingv1.Ingress{},
		TestPods:        map[string]*corev1.Pod{},
	}
	for i, doc := range splitDocuments(stream) {
		var tm typeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if tm.Kind == "" || tm.Metadata.Name == "" {
			return nil, fmt.Errorf("document %d has no kind or name:\n%s", i, doc)
		}
		var err error
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			err = strict(doc, r.Deployments, tm.Metadata.Name)
		case "v1 Service":
			err = strict(doc, r.Services, tm.Metadata.Name)
		case "v1 ConfigMap":
			err = strict(doc, r.ConfigMaps, tm.Metadata.Name)
		case "v1 Secret":
			err = strict(doc, r.Secrets, tm.Metadata.Name)
		case "v1 ServiceAccount":
			err = strict(doc, r.ServiceAccounts, tm.Metadata.Name)
		case "policy/v1 PodDisruptionBudget":
			err = strict(doc, r.PDBs, tm.Metadata.Name)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			err = strict(doc, r.HPAs, tm.Metadata.Name)
		case "networking.k8s.io/v1 NetworkPolicy":
			err = strict(doc, r.NetworkPolicies, tm.Metadata.Name)
		case "keda.sh/v1alpha1 ScaledObject":
			err = strict(doc, r.ScaledObjects, tm.Metadata.Name)
		case "keda.sh/v1alpha1 TriggerAuthentication":
			err = strict(doc, r.TriggerAuths, tm.Metadata.Name)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			err = strict(doc, r.ServiceMonitors, tm.Metadata.Name)
		case "monitoring.coreos.com/v1 PrometheusRule":
			err = strict(doc, r.PrometheusRules, tm.Metadata.Name)
		case "networking.k8s.io/v1 Ingress":
			err = strict(doc, r.Ingresses, tm.Metadata.Name)
		case "v1 Pod":
			err = strict(doc, r.TestPods, tm.Metadata.Name)
			if err == nil && r.TestPods[tm.Metadata.Name].Annotations["helm.sh/hook"] != "test" {
				err = fmt.Errorf("a Pod that is not a `helm test` hook")
			}
		default:
			err = fmt.Errorf("unexpected object %s %s", tm.APIVersion, tm.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", tm.Kind, tm.Metadata.Name, err)
		}
	}
	return r, nil
}

// strict decodes doc into a new T, refusing unknown fields, and files it
// under name (a second object of the same kind and name is an error).
func strict[T any](doc []byte, into map[string]*T, name string) error {
	if _, dup := into[name]; dup {
		return fmt.Errorf("rendered twice")
	}
	v := new(T)
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		return err
	}
	into[name] = v
	return nil
}

// splitDocuments cuts a YAML stream at "---" lines, dropping empty
// documents and helm's "# Source:" comments.
func splitDocuments(stream []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Bytes()))) > 0 {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(stream, []byte("\n")) {
		if t := bytes.TrimRight(line, " \r\n"); bytes.Equal(t, []byte("---")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
		}
	}
	return out.Bytes()
}
