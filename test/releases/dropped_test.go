package releases

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/check"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	crdresults "github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// metallb is the CRDs as generated (conversion None; the chart's add a
// conversion webhook, which does not run here).
func metallb(v string) release {
	return release{module: "go.universe.tf/metallb", version: v, dirs: []string{"config/crd/bases"}}
}

// MetalLB v0.14.9 drops the AddressPool CRD (addresspools.metallb.io) and
// keeps the rest of group metallb.io. Checked against a cluster that ran
// v0.13.12, the live check must say what the release deletes, as the
// offline check does: with AddressPools, an error naming them and the
// owners whose apply deletes it (from the CRD's marks: kubectl's
// server-side apply, or a Helm release whose chart templates it); with
// none, not an error. No mark is needed: the group is the release's.
func TestLiveCheckSaysWhatTheReleaseDrops(t *testing.T) {
	read := func(r release) []*apiextensionsv1.CustomResourceDefinition {
		found, err := manifest.ReadCRDs(t.Context(), crdPaths(t, r), true, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", r.module, r.version, err)
		}
		return found.CRDs
	}
	old, next := read(metallb("v0.13.12")), read(metallb("v0.14.9"))
	const dropped = "addresspools.metallb.io"
	for _, n := range next {
		if n.Name == dropped {
			t.Fatalf("v0.14.9 has %s: the pair no longer drops it", dropped)
		}
	}
	for _, tc := range []struct {
		name     string
		pools    int
		helm     bool // installed as Helm installs the chart's templated CRDs
		severity lifecycle.Severity
		message  []string
	}{
		{name: "2 AddressPools, applied server-side", pools: 2, severity: lifecycle.SeverityError,
			message: []string{"is on the cluster with 2 objects (metallb-system/pool-0, metallb-system/pool-1) and not in the new manifests, which ship other CRDs of its group metallb.io",
				"kubectl apply --prune deletes addresspools.metallb.io and, with it, all 2 objects of it; a plain kubectl apply leaves it"}},
		{name: "2 AddressPools, from a Helm release", pools: 2, helm: true, severity: lifecycle.SeverityError,
			message: []string{"is on the cluster with 2 objects (metallb-system/pool-0, metallb-system/pool-1)",
				"helm upgrade of release metallb in metallb-system (its chart templates the CRD, without helm.sh/resource-policy: keep)", "deletes addresspools.metallb.io and, with it, all 2 objects of it"}},
		{name: "no AddressPool", pools: 0, severity: lifecycle.SeverityNote,
			message: []string{"is on the cluster with no object", "nothing is lost"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			ctx := t.Context()
			sb := sandbox.StartT(t, sandbox.Options{})
			fx, err := fixtures.NewClients(sb.RestConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, crd := range old {
				if tc.helm {
					crd = crd.DeepCopy()
					if crd.Annotations == nil {
						crd.Annotations = map[string]string{}
					}
					crd.Annotations["meta.helm.sh/release-name"] = "metallb"
					crd.Annotations["meta.helm.sh/release-namespace"] = "metallb-system"
				}
				if err := applyCRD(ctx, fx, crd, false); err != nil {
					t.Fatalf("installing %s: %v", crd.Name, err)
				}
			}
			for _, crd := range old {
				if err := waitServed(ctx, fx, crd); err != nil {
					t.Fatal(err)
				}
			}
			pools := fx.Dynamic.Resource(schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "addresspools"}).Namespace("metallb-system")
			for i := range tc.pools {
				// The smallest AddressPool v1beta1 takes: addresses and protocol are required.
				body := fmt.Sprintf(`{"apiVersion":"metallb.io/v1beta1","kind":"AddressPool","metadata":{"name":"pool-%d","namespace":"metallb-system"},"spec":{"protocol":"layer2","addresses":["192.168.10.%d/32"]}}`, i, i)
				if _, err := pools.Patch(ctx, fmt.Sprintf("pool-%d", i), types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: installer}); err != nil {
					t.Fatal(err)
				}
			}
			c, err := cluster.NewClients(sb.RestConfig())
			if err != nil {
				t.Fatal(err)
			}

			found, err := check.AgainstCluster(ctx, c, next, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []crdresults.Finding
			for _, f := range found {
				if f.Kind == crdresults.FindingDropped {
					got = append(got, f)
				}
			}
			if len(got) != 1 || got[0].CRD != dropped || got[0].Rule != "crdDropped" {
				t.Fatalf("dropped findings %+v, want one crdDropped for %s", got, dropped)
			}
			f := got[0]
			t.Logf("%s %s: %s", f.Severity, f.Rule, f.Message)
			if f.Severity != tc.severity {
				t.Errorf("severity %s, want %s", f.Severity, tc.severity)
			}
			for _, want := range tc.message {
				if !strings.Contains(f.Message, want) {
					t.Errorf("message %q\nlacks %q", f.Message, want)
				}
			}
			if len(f.Fix) != 2 || !strings.HasPrefix(f.Fix[0].Text, "keep "+dropped+" in the manifests") || !strings.HasPrefix(f.Fix[1].Text, "to retire it: delete its objects first") {
				t.Errorf("fix %+v", f.Fix)
			}
		})
	}
}
