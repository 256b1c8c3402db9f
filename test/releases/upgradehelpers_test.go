package releases

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	crdresults "github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

func knativeServing(v string) release {
	return release{module: "knative.dev/serving", version: v, dirs: []string{"config/core/300-resources"}}
}

func crossplane(v string) release {
	return release{module: "github.com/crossplane/crossplane", version: v, dirs: []string{"cluster/crds"}}
}

// upgradeRun is one run of `upgrade -o json`.
type upgradeRun struct {
	code           int
	report         report.UpgradeReport
	stdout, stderr string
}

// runUpgrade runs upgrade -R -o json with args; anything but a report on
// stdout fails the test with what the plugin printed.
func runUpgrade(t *testing.T, args ...string) upgradeRun {
	t.Helper()
	full := append([]string{"upgrade", "-R", "-o", "json"}, args...)
	var r upgradeRun
	r.code, r.stdout, r.stderr = runPlugin(t, full...)
	if r.code == 1 {
		t.Fatalf("a dead end: %s exits 1:\n%s%s", strings.Join(full, " "), r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &r.report); err != nil {
		t.Fatalf("%s exits %d and prints no UpgradeReport: %v\n%s%s", strings.Join(full, " "), r.code, err, r.stdout, r.stderr)
	}
	return r
}

// firstWaypoint is the step the walk takes next, as upgrade orders the
// plan: every CRD's steps before the apply, then the apply, then the rest.
func firstWaypoint(r report.UpgradeReport) (string, *lifecycle.Waypoint) {
	for _, phase := range []lifecycle.Phase{lifecycle.PhaseBefore, lifecycle.PhaseApply, lifecycle.PhaseAfter} {
		for _, u := range r.CRDs {
			for i, w := range u.Steps {
				if w.Phase == phase {
					return u.CRD, &u.Steps[i]
				}
			}
		}
	}
	return "", nil
}

// statusNext is each CRD's next step as `status --release -o json` gives it.
func statusNext(t *testing.T, args ...string) map[string]report.StatusItem {
	t.Helper()
	full := append([]string{"status", "-R", "-o", "json"}, args...)
	code, out, errOut := runPlugin(t, full...)
	if code != 0 {
		t.Fatalf("%s exits %d:\n%s%s", strings.Join(full, " "), code, out, errOut)
	}
	var doc report.StatusReport
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%s prints no StatusReport: %v\n%s", strings.Join(full, " "), err, out)
	}
	items := map[string]report.StatusItem{}
	for _, it := range doc.Items {
		items[it.Name] = it
	}
	return items
}

// sameStep says how status's next step differs from the plan's first step
// of the same CRD ("" when they agree): the same command, or, for the
// owner's apply (no command of the plugin), the same words.
func sameStep(next lifecycle.Next, w lifecycle.Waypoint) string {
	switch {
	case next.Command != w.Command:
		return fmt.Sprintf("status says %q (%s), the plan %q (%s)", next.Command, next.Reason, w.Command, w.Text)
	case w.Command == "" && !strings.Contains(next.Reason, w.Text):
		return fmt.Sprintf("status says %s: %q, the plan %s: %q", next.Action, next.Reason, w.Phase, w.Text)
	}
	return ""
}

// probesApply asks the API server whether every probe's client can still
// apply it server-side, as a dry run so that etcd keeps what the plugin
// left: at its own version while the live CRD serves it, otherwise at the
// storage version with what a read there shows (the client moved, as a
// removal tells it to). A managedFields entry at a version the CRD no
// longer lists fails either way (kubernetes#111937).
func probesApply(ctx context.Context, c fixtures.Clients, probes []probe) []string {
	var failed []string
	for _, p := range probes {
		live, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, p.crd.Name, metav1.GetOptions{})
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		body := p.body
		if v := stages.SpecVersion(live, p.version); v == nil || !v.Served {
			at := stages.StorageVersion(live)
			got, err := c.Dynamic.Resource(p.resource(at)).Namespace(p.namespace()).Get(ctx, p.name, metav1.GetOptions{})
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: read at %s: %v", p, at, err))
				continue
			}
			body = map[string]any{"apiVersion": got.GetAPIVersion(), "kind": got.GetKind(), "metadata": p.body["metadata"]}
			if spec, ok := got.Object["spec"]; ok {
				body["spec"] = spec
			}
		}
		b, err := json.Marshal(body)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		gv, _ := schema.ParseGroupVersion(body["apiVersion"].(string))
		_, err = c.Dynamic.Resource(p.resource(gv.Version)).Namespace(p.namespace()).Patch(ctx, p.name, types.ApplyPatchType, b,
			metav1.PatchOptions{FieldManager: installer, DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: apply at %s: %v", p, gv.Version, err))
		}
	}
	return failed
}

// releaseApplied says how the live CRD differs from the release's (""
// when it serves the release's versions, served and storage as the release
// says, and lists the storage version alone in storedVersions) and where
// etcd holds an object at another version.
func releaseApplied(ctx context.Context, c fixtures.Clients, sb *sandbox.Sandbox, next *apiextensionsv1.CustomResourceDefinition) []string {
	live, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, next.Name, metav1.GetOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	shape := func(crd *apiextensionsv1.CustomResourceDefinition) []string {
		var out []string
		for _, v := range crd.Spec.Versions {
			out = append(out, fmt.Sprintf("%s served=%t storage=%t", v.Name, v.Served, v.Storage))
		}
		slices.Sort(out)
		return out
	}
	var out []string
	if got, want := shape(live), shape(next); !slices.Equal(got, want) {
		out = append(out, fmt.Sprintf("%s: spec.versions %v, the release's %v", next.Name, got, want))
	}
	storage := stages.StorageVersion(next)
	if !slices.Equal(live.Status.StoredVersions, []string{storage}) {
		out = append(out, fmt.Sprintf("%s: status.storedVersions %v, not [%s]", next.Name, live.Status.StoredVersions, storage))
	}
	counts, err := sb.Store.StoredAPIVersions(ctx, next.Spec.Group, next.Spec.Names.Plural)
	if err != nil {
		return append(out, err.Error())
	}
	for apiVersion, n := range counts {
		if apiVersion != next.Spec.Group+"/"+storage {
			out = append(out, fmt.Sprintf("%s: etcd holds %d objects at %s, storage is %s", next.Name, n, apiVersion, storage))
		}
	}
	return out
}

// labelProbes has each probe's client own a field of it (a label), so
// that its managedFields entry names the version it applied at: an object
// whose apply owns nothing beyond its name has no entry, and nothing a
// removed version could break.
func labelProbes(ctx context.Context, c fixtures.Clients, probes []probe) error {
	for _, p := range probes {
		meta := p.body["metadata"].(map[string]any)
		meta["labels"] = map[string]any{"crdversion.test/applied-at": p.version}
		if err := applyObject(ctx, c, p, p.body); err != nil {
			return fmt.Errorf("%s: labelling: %w", p, err)
		}
		got, err := c.Dynamic.Resource(p.resource(p.version)).Namespace(p.namespace()).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(got.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == installer && m.APIVersion == p.crd.Spec.Group+"/"+p.version
		}) {
			return fmt.Errorf("%s: no managedFields entry of %s at %s: %+v", p, installer, p.version, got.GetManagedFields())
		}
	}
	return nil
}

// retire does what a dropped CRD's fix says to retire it: delete its objects first. The probes
// of those CRDs go with them.
func retire(t *testing.T, c fixtures.Clients, probes []probe, dropped []crdresults.Finding) []probe {
	t.Helper()
	for _, f := range dropped {
		if !strings.Contains(cmdOf(f.Fix), "delete its objects first") {
			t.Fatalf("a dead end: %s is dropped and its fix names no way to retire it: %+v", f.CRD, f.Fix)
		}
		probes = slices.DeleteFunc(probes, func(p probe) bool {
			if p.crd.Name != f.CRD {
				return false
			}
			err := c.Dynamic.Resource(p.resource(p.version)).Namespace(p.namespace()).Delete(t.Context(), p.name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("retiring %s: deleting %s: %v", f.CRD, p, err)
			}
			t.Logf("retired %s: deleted %s", f.CRD, p)
			return true
		})
	}
	return probes
}

// cmdOf is advice as one text.
func cmdOf(fix []lifecycle.Advice) string {
	var b strings.Builder
	for _, a := range fix {
		b.WriteString(a.Text + "; ")
	}
	return b.String()
}
