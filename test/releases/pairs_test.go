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
	// variant is how the cluster got there and how its users apply the
	// new release, when not server-side under kubectl's field manager.
	variant variant
	// promote is the plugin's step run before check, for variant promoted:
	// its arguments after `promote`.
	promote []string
}

// variant is a way of installing and upgrading a release.
type variant int

const (
	// serverSide: every release applied as kubectl apply --server-side
	// does, with objects of every served version; their clients apply
	// them again after the upgrade.
	serverSide variant = iota
	// clientSide: the first release installed with kubectl apply (client-
	// side: the CRD carries kubectl's last-applied annotation), kubectl
	// create where apply is refused; the new one applied the same way each
	// CRD was (kubectl replace for those created), by real kubectl. No
	// objects: the CRDs' apply is the question.
	clientSide
	// promoted: the first release applied server-side, then the plugin's
	// promote changes one CRD's spec.versions (an update under its own
	// field manager); the new release applied server-side by its owner,
	// not forced. No objects.
	promoted
)

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
	{project: "cert-manager", path: []release{certManager("v1.15.0"), certManager("v1.16.0")}},
	{project: "Karpenter", path: []release{karpenter("v0.37.0"), karpenter("v1.0.0")}},
	{project: "Karpenter", path: []release{karpenter("v0.37.0"), karpenter("v1.0.0"), karpenter("v1.1.0")}},
	{project: "Gateway API", path: []release{gatewayAPI("v1.1.0"), gatewayAPI("v1.2.0")}},
	{project: "Prometheus Operator", path: []release{prometheusOperator("v0.75.0"), prometheusOperator("v0.76.0")}},
	{project: "KEDA", path: []release{keda("v2.14.0"), keda("v2.15.0")}},
	{project: "Velero", path: []release{velero("v1.13.0"), velero("v1.14.0")}},
	{project: "Cluster API", path: []release{clusterAPI("v1.10.0"), clusterAPI("v1.11.0")}},
	{project: "Cluster API", path: []release{clusterAPI("v1.9.0"), clusterAPI("v1.10.0")}},
	{project: "Kyverno", path: []release{kyverno("v1.11.0"), kyverno("v1.12.0"), kyverno("v1.13.0")}},
	{project: "external-secrets", path: []release{externalSecrets("v0.14.4"), externalSecrets("v0.16.1")}},
	{project: "external-secrets", path: []release{externalSecrets("v0.14.4"), externalSecrets("v0.16.1"), externalSecrets("v0.17.0")}},
	// scrapeconfigs' manifest grows from 227 to 336 KiB: past the 256 KiB
	// of the annotation client-side apply writes.
	{project: "Prometheus Operator", path: []release{prometheusOperator("v0.75.0"), prometheusOperator("v0.76.0")}, variant: clientSide},
	// secretstores' manifest grows from 243 to 249 KiB: just under.
	{project: "external-secrets", path: []release{externalSecrets("v0.16.1"), externalSecrets("v0.17.0")}, variant: clientSide},
	// status's next step for httproutes: deprecate v1beta1.
	{project: "Gateway API", path: []release{gatewayAPI("v1.1.0"), gatewayAPI("v1.2.0")}, variant: promoted,
		promote: []string{"httproutes.gateway.networking.k8s.io", "v1", "--to", "deprecated"}},
}

func (p pair) String() string {
	s := p.project + " "
	for i, r := range p.path {
		if i > 0 {
			s += " → "
		}
		s += r.version
	}
	switch p.variant {
	case serverSide:
		// The tier's way: named by its releases alone.
	case clientSide:
		s += " (client-side apply)"
	case promoted:
		s += " (after promote " + strings.Join(p.promote, " ") + ")"
	}
	return s
}
