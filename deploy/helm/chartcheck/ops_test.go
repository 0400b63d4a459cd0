package chartcheck

import (
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
)

// releaseNamespace is the namespace .ci/helm.sh renders the release into
// (CHART_NAMESPACE); the release is named imgflow.
func releaseNamespace(t *testing.T) string {
	t.Helper()
	ns := os.Getenv("CHART_NAMESPACE")
	if ns == "" {
		t.Fatal("CHART_NAMESPACE is not set: the namespace .ci/helm.sh renders the chart into")
	}
	return ns
}

// releaseSelector is what every alert and KEDA query must match: the
// release's namespace and its ops Services (the ServiceMonitor's jobs).
func releaseSelector() string {
	return fmt.Sprintf(`namespace=%q,job=~"imgflow-(serve|work)-ops"`, os.Getenv("CHART_NAMESPACE"))
}

// rulesFile is the alert rules cut out of the default render, the file
// promtool tests (RULES_FILE).
func rulesFile(t *testing.T) string {
	t.Helper()
	f := os.Getenv("RULES_FILE")
	if f == "" {
		t.Fatal("RULES_FILE is not set: the rendered alert rules .ci/helm.sh hands promtool")
	}
	return f
}

// goConst reads `name = A << B` or `name = N` from a Go file of the root
// module, so that limits are checked against the code, not a copy.
func goConst(t *testing.T, file, name string) int64 {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\b` + name + `\s*=\s*(\d+)(?:\s*<<\s*(\d+))?`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("%s: no `%s = N` or `%s = N << M`", file, name, name)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	if len(m[2]) > 0 {
		shift, _ := strconv.Atoi(string(m[2]))
		n <<= shift
	}
	return n
}

// The API Service carries the public port only; /metrics, /ready and the
// queue dashboard are on the ops Services, which the ServiceMonitor scrapes.
func TestAPIServiceHasOnlyThePublicPort(t *testing.T) {
	for _, r := range rendered(t) {
		serve := component(r, "serve")
		api := r.Services["imgflow"]
		if api == nil {
			t.Fatalf("%s: no API Service named imgflow", r.Name)
		}
		if len(api.Spec.Ports) != 1 || api.Spec.Ports[0].TargetPort.StrVal != "http" {
			t.Errorf("%s: the API Service exposes %v, want the public port (http) alone", r.Name, api.Spec.Ports)
		}
		for _, p := range serve.Spec.Template.Spec.Containers[0].Ports {
			if p.Name == "http" && env(r, serve.Spec.Template.Spec.Containers[0])["IMGFLOW_ADDR"] != ":"+strconv.Itoa(int(p.ContainerPort)) {
				t.Errorf("%s: serve's http port %d is not IMGFLOW_ADDR", r.Name, p.ContainerPort)
			}
		}
		for _, c := range []string{"serve", "work"} {
			ctr := component(r, c).Spec.Template.Spec.Containers[0]
			ops := opsPort(t, r, ctr)
			svc := r.Services["imgflow-"+c+"-ops"]
			if svc == nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != ops.Name ||
				!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(component(r, c).Spec.Template.Labels)) {
				t.Errorf("%s: no Service imgflow-%s-ops for %s's ops port %q", r.Name, c, c, ops.Name)
			}
		}
		for name, sm := range r.ServiceMonitors {
			sel := labels.SelectorFromSet(sm.Spec.Selector.MatchLabels)
			for _, e := range sm.Spec.Endpoints {
				for sname, svc := range r.Services {
					if !sel.Matches(labels.Set(svc.Labels)) {
						continue
					}
					for _, p := range svc.Spec.Ports {
						if p.Name == e.Port && !strings.HasSuffix(sname, "-ops") {
							t.Errorf("%s: ServiceMonitor %s scrapes %s's port %s, which is not an ops Service", r.Name, name, sname, p.Name)
						}
					}
				}
				if e.Port != "ops" || e.Path != "/metrics" {
					t.Errorf("%s: ServiceMonitor %s scrapes %s on %s, want /metrics on the ops port", r.Name, name, e.Path, e.Port)
				}
			}
		}
	}
}

// An Ingress reaches the API Service's public port only, and lets the
// largest body serve accepts through (ingress-nginx's default is 1 MiB).
func TestIngressReachesTheAPIOnly(t *testing.T) {
	largest := goConst(t, "server/batchinput.go", "maxBatchMultipartBody")
	seen := 0
	for _, r := range rendered(t) {
		for name, ing := range r.Ingresses {
			seen++
			if ing.Spec.IngressClassName == nil || len(ing.Spec.TLS) == 0 || len(ing.Spec.Rules) == 0 {
				t.Errorf("%s: Ingress %s lacks its class, TLS or hosts", r.Name, name)
			}
			for _, rule := range ing.Spec.Rules {
				for _, p := range rule.HTTP.Paths {
					b := p.Backend.Service
					if b == nil || b.Name != "imgflow" || b.Port.Name != "http" {
						t.Errorf("%s: Ingress %s path %s goes to %+v, want the API Service's http port", r.Name, name, p.Path, p.Backend)
					}
				}
			}
			size, err := resource.ParseQuantity(strings.TrimSuffix(strings.ToUpper(ing.Annotations["nginx.ingress.kubernetes.io/proxy-body-size"]), "B") + "i")
			if err != nil || size.Value() < largest {
				t.Errorf("%s: Ingress %s lets bodies of %q through (%v); serve accepts %d bytes (maxBatchMultipartBody)", r.Name, name, ing.Annotations["nginx.ingress.kubernetes.io/proxy-body-size"], err, largest)
			}
		}
	}
	if seen == 0 {
		t.Error("no values file renders an Ingress")
	}
}

// `helm test` asks the release itself: the API Service's /health and an API
// route, and each ops Service's /ready, on ports those Services have.
func TestHelmTestHookAsksTheRelease(t *testing.T) {
	for _, r := range rendered(t) {
		if len(r.TestPods) != 1 {
			t.Errorf("%s: %d `helm test` Pods, want 1", r.Name, len(r.TestPods))
			continue
		}
		for _, p := range r.TestPods {
			c := p.Spec.Containers[0]
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever || !slices.Contains(c.Args, "--fail") || !slices.Contains(c.Args, "--fail-early") {
				t.Errorf("%s: the test Pod does not fail on the first non-2xx answer: %v %v", r.Name, c.Command, c.Args)
			}
			asked := map[string]bool{}
			for _, a := range c.Args {
				u, err := url.Parse(a)
				if err != nil || u.Scheme != "http" {
					continue
				}
				svc := r.Services[u.Hostname()]
				if svc == nil || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == u.Port() }) {
					t.Errorf("%s: the test asks %s, which is no port of a Service of the release", r.Name, a)
					continue
				}
				asked[u.Hostname()+u.Path] = true
			}
			for _, want := range []string{"imgflow/health", "imgflow/openapi.json", "imgflow-serve-ops/ready", "imgflow-work-ops/ready"} {
				if !asked[want] {
					t.Errorf("%s: the test does not ask %s; it asks %v", r.Name, want, asked)
				}
			}
		}
	}
}

// Egress to DNS and Redis goes where they are, never to every address on
// their ports; the rule to the world keeps the metadata address and NAT64
// (which reaches IPv4 private ranges) out.
func TestNetworkPolicyScopesDNSAndRedis(t *testing.T) {
	seen := 0
	for _, r := range rendered(t) {
		for name, np := range r.NetworkPolicies {
			seen++
			var dns, redis bool
			for _, rule := range np.Spec.Egress {
				if len(rule.To) == 0 {
					t.Errorf("%s: NetworkPolicy %s opens %v to every destination", r.Name, name, rule.Ports)
				}
				for _, p := range rule.Ports {
					switch p.Port.IntValue() {
					case 53:
						dns = true
					case 6379, 6380:
						redis = true
					}
				}
				for _, peer := range rule.To {
					if peer.IPBlock == nil {
						continue
					}
					checkWorldBlock(t, r.Name, name, peer.IPBlock, len(rule.Ports) > 0)
				}
			}
			if !dns || !redis {
				t.Errorf("%s: NetworkPolicy %s has no DNS (%v) or Redis (%v) egress", r.Name, name, dns, redis)
			}
		}
	}
	if seen == 0 {
		t.Error("no values file renders a NetworkPolicy")
	}
}

// checkWorldBlock: a block that opens the world excepts the metadata
// address and NAT64; one on given ports holds none of them.
func checkWorldBlock(t *testing.T, values, policy string, b *networkingv1.IPBlock, ported bool) {
	t.Helper()
	cidr := netip.MustParsePrefix(b.CIDR)
	closed := func(a netip.Addr) bool {
		if !cidr.Contains(a) {
			return true
		}
		for _, e := range b.Except {
			if netip.MustParsePrefix(e).Contains(a) {
				return true
			}
		}
		return false
	}
	for _, a := range []string{"169.254.169.254", "10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "fd00::1"} {
		if cidr.Bits() == 0 && !closed(netip.MustParseAddr(a)) {
			t.Errorf("%s: NetworkPolicy %s opens %s to %s", values, policy, b.CIDR, a)
		}
	}
	if ported && cidr.Bits() == 0 {
		t.Errorf("%s: NetworkPolicy %s opens ports to %s", values, policy, b.CIDR)
	}
}

// A Deployment's replicas belong to the Deployment or to its autoscaler,
// never both; pods roll when the chart's Secret, an external one or
// rolloutRevision change; the image is REGISTRY/REPOSITORY@DIGEST when a
// digest is given.
func TestReplicasRolloutsAndImage(t *testing.T) {
	pinned := 0
	for _, r := range rendered(t) {
		scaled := map[string]bool{}
		for _, h := range r.HPAs {
			scaled[h.Spec.ScaleTargetRef.Name] = true
		}
		for _, so := range r.ScaledObjects {
			scaled[so.Spec.ScaleTargetRef.Name] = true
		}
		for name, d := range r.Deployments {
			if scaled[name] == (d.Spec.Replicas != nil) {
				t.Errorf("%s: %s has replicas %v while autoscaled is %v", r.Name, name, d.Spec.Replicas, scaled[name])
			}
			c := d.Spec.Template.Labels["app.kubernetes.io/component"]
			if c != "serve" && c != "work" {
				continue
			}
			a := d.Spec.Template.Annotations
			if a["checksum/secret"] == "" || a["checksum/config"] == "" {
				t.Errorf("%s: %s's pods do not roll when the chart's Secret or ConfigMap change", r.Name, name)
			}
			if strings.Contains(r.Name, "operator") && (a["imgflow.io/rollout-revision"] == "" || a["checksum/external-secrets"] == "") {
				t.Errorf("%s: %s's pods carry no rolloutRevision or external Secrets' checksum: %v", r.Name, name, a)
			}
			img := d.Spec.Template.Spec.Containers[0].Image
			if strings.Contains(img, "@") {
				pinned++
				if !regexp.MustCompile(`^[a-z0-9.-]+\.[a-z]+/[a-z0-9/_-]+@sha256:[0-9a-f]{64}$`).MatchString(img) {
					t.Errorf("%s: %s's image %q is not REGISTRY/REPOSITORY@sha256:DIGEST", r.Name, name, img)
				}
			}
		}
	}
	if pinned == 0 {
		t.Error("no values file renders an image pinned by digest")
	}
}

// Rendering refuses what would otherwise be silently wrong, naming it: a
// misspelt key, a wrong type, replicas beside an autoscaler, a deliveries
// queue listed by hand, missing required values, a grace period under the
// job deadline. Runs the helm .ci/helm.sh installed (HELM).
func TestRenderRefuses(t *testing.T) {
	helm := os.Getenv("HELM")
	if helm == "" {
		t.Fatal("HELM is not set: the helm binary .ci/helm.sh installs")
	}
	chart := filepath.Join(repoRoot, "deploy", "helm", "imgflow")
	defaults := filepath.Join(chart, "ci", "default-values.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "serve.autoscalling.enabled=true"}, "autoscalling"},
		{[]string{"--set", "work.kedaa.enabled=true"}, "kedaa"},
		{[]string{"--set", "work.concurrency=ten"}, "concurrency"},
		{[]string{"--set", "serve.replicas=3"}, "serve.replicas is set but serve.autoscaling.enabled"},
		{[]string{"--set", "queues={prod,prod-deliveries}"}, "queues"},
		{[]string{"--set", "work.terminationGracePeriodSeconds=60"}, "terminationGracePeriodSeconds"},
		{[]string{"--set", "redis.url=redis://:pw@redis.example.net:6379/0"}, "networkPolicy.redisPeers is required"},
		{[]string{"--set", "ingress.enabled=true"}, "ingress.hosts"},
	} {
		out, err := exec.Command(helm, append([]string{"template", "imgflow", chart, "-f", defaults, "--kube-version", "1.31.0"}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("helm template %v: err %v, output without %q:\n%.600s", c.args, err, c.want, out)
		}
	}
	out, err := exec.Command(helm, "template", "imgflow", chart, "--kube-version", "1.31.0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "publicURL (IMGFLOW_PUBLIC_URL) is required") {
		t.Errorf("helm template without values: err %v:\n%.600s", err, out)
	}
}
