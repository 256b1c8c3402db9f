package releases

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// walks are upgrades whose way goes through the plugin's steps before the
// owner's apply, or after it.
var walks = []struct {
	project  string
	from, to release
}{
	// DomainMapping v1alpha1 is removed (knative/serving#15588): objects a
	// client applied at it carry managedFields entries at v1alpha1, which
	// break every server-side apply once the version is gone.
	{project: "Knative Serving", from: knativeServing("v0.38.0"), to: knativeServing("v0.42.2")},
	// A downgrade (crossplane#5932): 1.17 stores functions at v1, which
	// 1.16 lacks; the way back goes through v1beta1 as storage.
	{project: "Crossplane, downgraded", from: crossplane("v1.17.0"), to: crossplane("v1.16.0")},
	// v1beta1 becomes storage of the multikueue kinds and v1alpha1, their
	// storage until then, is removed.
	{project: "Kueue", from: kueue("v0.8.2"), to: kueue("v0.9.0")},
	// Nothing to do but the apply: the walk must not invent steps.
	{project: "Crossplane", from: crossplane("v1.17.0"), to: crossplane("v1.18.2")},
	// v2.0 removes EnvironmentConfig v1alpha1 (crossplane#6717) and
	// deprecates every version of the old Usage kind; its module path
	// gained /v2.
	{project: "Crossplane", from: crossplane("v1.18.2"), to: release{module: "github.com/crossplane/crossplane/v2", version: "v2.0.0", dirs: []string{"cluster/crds"}}},
}

// maxWalkRounds bounds the runs of upgrade: the plugin's steps, the
// owner's apply, the steps after it, and one to spare.
const maxWalkRounds = 4

// TestUpgradeWalks installs a release with objects of every served
// version, then walks `upgrade -f NEW` as its words say: run it, and when
// it stops at the owner's apply, apply the release server-side (not
// forced) and run it again, until it exits 0. Any other stop is a dead
// end. Every probe's client must be able to apply it before and after each
// apply (no window), and at the end NEW must be applied, storedVersions
// and etcd must hold the storage version alone, and every client's apply
// must keep its fields. Before the walk, status --release must name the
// plan's first step.
func TestUpgradeWalks(t *testing.T) {
	for _, w := range walks {
		t.Run(strings.ReplaceAll(w.project+" "+w.from.version+" → "+w.to.version, " ", "_"), func(t *testing.T) {
			ctx := t.Context()
			fromDirs, toDirs := crdPaths(t, w.from), crdPaths(t, w.to)
			read := func(paths []string) []*apiextensionsv1.CustomResourceDefinition {
				found, err := manifest.ReadCRDs(ctx, paths, true, nil)
				if err != nil {
					t.Fatal(err)
				}
				return found.CRDs
			}
			old, next := read(fromDirs), read(toDirs)
			sb := sandbox.StartT(t, sandbox.Options{})
			c, err := fixtures.NewClients(sb.RestConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, crd := range old {
				if err := applyCRD(ctx, c, crd, false); err != nil {
					t.Fatalf("installing %s: %v", crd.Name, err)
				}
			}
			for _, crd := range old {
				if err := waitServed(ctx, c, crd); err != nil {
					t.Fatal(err)
				}
			}
			probes, skipped := createProbes(ctx, c, old)
			for _, s := range skipped {
				t.Logf("no probe: %s", s)
			}
			if len(probes) == 0 {
				t.Fatal("no object could be created")
			}
			if err := labelProbes(ctx, c, probes); err != nil {
				t.Fatal(err)
			}
			kube := []string{"--kubeconfig", sb.KubeconfigPath()}
			args := slices.Clip(append(append(fileArgs("-f", toDirs), "--switch-grace=0"), kube...))

			// One next step: status toward the release says the plan's.
			plan := runUpgrade(t, append(args, "--dry-run=client")...)
			if plan.code != 3 {
				t.Fatalf("upgrade --dry-run=client exits %d before the release is applied:\n%s", plan.code, plan.stdout)
			}
			status := statusNext(t, append(fileArgs("--release", toDirs), kube...)...)
			firstCRD, first := firstWaypoint(plan.report)
			if first == nil {
				t.Fatalf("the plan has no step:\n%s", plan.stdout)
			}
			t.Logf("plan: first step %s: %s %s", firstCRD, first.Phase, first.Text)
			onCluster := map[string]bool{}
			for _, crd := range old {
				onCluster[crd.Name] = true
			}
			for _, u := range plan.report.CRDs {
				if len(u.Steps) == 0 || !onCluster[u.CRD] {
					continue // status lists the cluster's CRDs: a new one is the apply alone
				}
				it, ok := status[u.CRD]
				switch {
				case !ok:
					t.Errorf("status --release lists no %s", u.CRD)
				case !it.Release:
					t.Errorf("status --release: %s's next step is not toward the release: %+v", u.CRD, it.Next)
				default:
					if d := sameStep(it.Next, u.Steps[0]); d != "" {
						t.Errorf("%s: the next step differs: %s", u.CRD, d)
					}
				}
			}

			for round := 0; ; round++ {
				if round == maxWalkRounds {
					t.Fatalf("upgrade is not done after %d runs", round)
				}
				run := runUpgrade(t, args...)
				for _, s := range run.report.Taken {
					t.Logf("round %d: took %s", round, s)
				}
				if run.code == 0 {
					if !run.report.Done {
						t.Fatalf("upgrade exits 0 and says not done:\n%s", run.stdout)
					}
					break
				}
				crd, step := firstWaypoint(run.report)
				if run.code == 3 && step == nil && len(run.report.Dropped) > 0 {
					// What the release drops holds objects: the user retires them, as its fix says.
					probes = retire(t, c, probes, run.report.Dropped)
					continue
				}
				if run.code != 3 || step == nil || step.Phase != lifecycle.PhaseApply {
					t.Fatalf("a dead end: round %d: upgrade exits %d, its first step left %s %+v:\n%s\n%s", round, run.code, crd, step, run.stdout, run.stderr)
				}
				t.Logf("round %d: the owner's apply: %s", round, step.Text)
				if failed := probesApply(ctx, c, probes); len(failed) > 0 {
					t.Errorf("before the apply, %d of %d clients' server-side applies fail: %s", len(failed), len(probes), strings.Join(failed, "\n"))
				}
				for _, n := range next {
					if err := applyCRD(ctx, c, n, false); err != nil {
						t.Fatalf("round %d: the owner's apply of %s, which upgrade left to it: %v", round, n.Name, err)
					}
				}
				for _, n := range next {
					if err := waitServed(ctx, c, n); err != nil {
						t.Fatal(err)
					}
				}
				if failed := probesApply(ctx, c, probes); len(failed) > 0 {
					t.Errorf("right after the apply, %d of %d clients' server-side applies fail: %s", len(failed), len(probes), strings.Join(failed, "\n"))
				}
			}

			for _, n := range next {
				for _, d := range releaseApplied(ctx, c, sb, n) {
					t.Error(d)
				}
			}
			for name, it := range statusNext(t, append(fileArgs("--release", toDirs), kube...)...) {
				if it.Release && it.Next.Action != lifecycle.ActionNone {
					t.Errorf("done, and status --release says of %s: %s %s", name, it.Next.Action, it.Next.Reason)
				}
			}
			if failed := probesApply(ctx, c, probes); len(failed) > 0 {
				t.Errorf("after the walk, %d of %d clients' server-side applies fail: %s", len(failed), len(probes), strings.Join(failed, "\n"))
			}
			a, err := upgrade(ctx, c, next, probes)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("API server: %s", a)
			if a.exit() != 0 {
				t.Errorf("after the walk, the API server's answer is %d: %s\nrefused: %v\nbroken: %v", a.exit(), a, a.refused, a.broken)
			}
		})
	}
}
