package releases

import "strings"

// release is one project's CRD manifests at a release tag, in the Go
// module that carries them.
type release struct {
	module, version string
	// dirs are the directories of its CRD manifests in the module, read
	// recursively.
	dirs []string
	// helm, for manifests kept as Helm templates, is the value its
	// templated labels take once rendered (the chart's name).
	helm string
}

func (r release) String() string { return r.version }

// pair is an upgrade as a cluster meets it: path[0] installed with its
// objects, each later release applied in turn, the last one checked
// against what the one before left.
type pair struct {
	project string
	path    []release
}

// karpenter is the chart's CRDs, as users install them: from v1.0 on
// pkg/apis/crds lacks the conversion webhook the chart adds (before, the
// chart's files are links to them).
func karpenter(v string) release {
	dir := "kwok/charts/crds"
	if strings.HasPrefix(v, "v0.") {
		dir = "pkg/apis/crds"
	}
	return release{module: "sigs.k8s.io/karpenter", version: v, dirs: []string{dir}}
}

func certManager(v string) release {
	return release{module: "github.com/cert-manager/cert-manager", version: v, dirs: []string{"deploy/crds"}, helm: "cert-manager"}
}

func gatewayAPI(v string) release {
	return release{module: "sigs.k8s.io/gateway-api", version: v, dirs: []string{"config/crd/standard"}}
}

func prometheusOperator(v string) release {
	return release{module: "github.com/prometheus-operator/prometheus-operator", version: v, dirs: []string{"example/prometheus-operator-crd"}}
}

func keda(v string) release {
	return release{module: "github.com/kedacore/keda/v2", version: v, dirs: []string{"config/crd/bases"}}
}

func velero(v string) release {
	return release{module: "github.com/vmware-tanzu/velero", version: v, dirs: []string{"config/crd/v1/bases"}}
}

func clusterAPI(v string) release {
	return release{module: "sigs.k8s.io/cluster-api", version: v, dirs: []string{"config/crd/bases"}}
}

func kyverno(v string) release {
	return release{module: "github.com/kyverno/kyverno", version: v, dirs: []string{"config/crds"}}
}

// externalSecrets is the CRDs as generated; the bundle and the chart add a
// conversion webhook, which does not run here.
func externalSecrets(v string) release {
	return release{module: "github.com/external-secrets/external-secrets", version: v, dirs: []string{"config/crds/bases"}}
}

// pairs are the upgrades checked. Each release must be one the module
// proxy serves; one it refuses skips its pair.
var pairs = []pair{
	{"cert-manager", []release{certManager("v1.15.0"), certManager("v1.16.0")}},
	{"Karpenter", []release{karpenter("v0.37.0"), karpenter("v1.0.0")}},
	{"Karpenter", []release{karpenter("v0.37.0"), karpenter("v1.0.0"), karpenter("v1.1.0")}},
	{"Gateway API", []release{gatewayAPI("v1.1.0"), gatewayAPI("v1.2.0")}},
	{"Prometheus Operator", []release{prometheusOperator("v0.75.0"), prometheusOperator("v0.76.0")}},
	{"KEDA", []release{keda("v2.14.0"), keda("v2.15.0")}},
	{"Velero", []release{velero("v1.13.0"), velero("v1.14.0")}},
	{"Cluster API", []release{clusterAPI("v1.10.0"), clusterAPI("v1.11.0")}},
	{"Cluster API", []release{clusterAPI("v1.9.0"), clusterAPI("v1.10.0")}},
	{"Kyverno", []release{kyverno("v1.11.0"), kyverno("v1.12.0"), kyverno("v1.13.0")}},
	{"external-secrets", []release{externalSecrets("v0.14.4"), externalSecrets("v0.16.1")}},
	{"external-secrets", []release{externalSecrets("v0.14.4"), externalSecrets("v0.16.1"), externalSecrets("v0.17.0")}},
}

func (p pair) String() string {
	s := p.project + " "
	for i, r := range p.path {
		if i > 0 {
			s += " → "
		}
		s += r.version
	}
	return s
}
