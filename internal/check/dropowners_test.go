package check

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// A live CRD the new manifests lack: how severe, by the objects it holds,
// why it is the release's (the same source or the same group), and whose
// apply deletes it, told by its marks; the fix keeps it or retires it.
func TestDroppedLiveSaysWhoDeletesIt(t *testing.T) {
	type m = map[string]string
	helm := m{"meta.helm.sh/release-name": "metallb", "meta.helm.sh/release-namespace": "metallb-system"}
	with := func(h m, more ...string) m {
		out := m{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	two := func(l DroppedLive) *DroppedLive {
		l.Counted, l.Count, l.Objects = true, 2, []string{"default/pool-a", "default/pool-b"}
		return &l
	}
	const generic = "nothing on it tells what applied it: a helm upgrade whose chart templates it (without helm.sh/resource-policy: keep), an Argo CD or Flux sync with prune, kubectl apply --prune deletes widgets.example.com"
	const annotate = "kubectl annotate crd widgets.example.com helm.sh/resource-policy=keep"
	for _, tc := range []struct {
		name                string
		labels, annotations m
		ssa                 string // a server-side apply manager
		live                *DroppedLive
		severity            lifecycle.Severity
		message, not        []string
		fix                 []string // each step contains its string, in order
	}{
		{name: "its group's release, no mark, objects: an error naming them and the owners that delete it",
			live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityError,
			message: []string{"widgets.example.com is on the cluster with 2 objects (default/pool-a, default/pool-b) and not in the new manifests, which ship other CRDs of its group example.com",
				generic + " and, with it, all 2 objects of it; a plain kubectl apply leaves it"},
			fix: []string{"keep widgets.example.com in the manifests while any object of it is to stay (or, where a Helm chart templates it, keep it out of helm upgrade's deletes: " + annotate + ")",
				"to retire it: delete its objects first (kubectl delete widgets.example.com --all -A"}},
		{name: "its group's release, no object: a note",
			live: &DroppedLive{Counted: true, SameGroup: true}, severity: lifecycle.SeverityNote,
			message: []string{"is on the cluster with no object", "nothing is lost: nothing on it tells what applied it", "kubectl apply --prune deletes widgets.example.com; a plain kubectl apply leaves it"},
			not:     []string{"with it"}},
		{name: "objects not countable: as if it had some",
			live: &DroppedLive{Why: "forbidden", SameGroup: true}, severity: lifecycle.SeverityError,
			message: []string{"(its objects could not be counted: forbidden)", "every object of it"}},
		{name: "more objects than named",
			live: &DroppedLive{Counted: true, Count: 40, SameGroup: true, Objects: []string{"a/p1", "a/p2", "a/p3"}}, severity: lifecycle.SeverityError,
			message: []string{"with 40 objects (a/p1, a/p2, a/p3 and 37 more)", "all 40 objects of it"}},
		{name: "more than the API server counted",
			live: &DroppedLive{Counted: true, Count: 3, AtLeast: true, SameGroup: true, Objects: []string{"p1", "p2", "p3"}}, severity: lifecycle.SeverityError,
			message: []string{"is on the cluster with objects (p1, p2, p3, ...)", "every object of it"}},
		{name: "a chart templates it without keep: helm upgrade deletes it",
			annotations: helm, live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityError,
			message: []string{"helm upgrade of release metallb in metallb-system (its chart templates the CRD, without helm.sh/resource-policy: keep) deletes widgets.example.com and, with it, all 2 objects of it; a plain kubectl apply leaves it"},
			fix:     []string{annotate, "to retire it"}},
		{name: "the same Helm release: an error, said so",
			annotations: helm, live: two(DroppedLive{SameSource: "Helm release metallb in metallb-system"}), severity: lifecycle.SeverityError,
			message: []string{"and not in the new manifests (both from Helm release metallb in metallb-system): helm upgrade of release metallb"}},
		{name: "the same Helm release, no object: a warning, as before",
			annotations: helm, live: &DroppedLive{Counted: true, SameSource: "Helm release metallb in metallb-system"}, severity: lifecycle.SeverityWarning,
			message: []string{"nothing is lost: helm upgrade of release metallb", "deletes widgets.example.com; a plain"}},
		{name: "with resource-policy keep Helm leaves it: a warning",
			annotations: with(helm, helmKeep, "keep"), live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityWarning,
			message: []string{"helm upgrade of release metallb in metallb-system (the CRD has helm.sh/resource-policy: keep), a plain kubectl apply leaves it; an apply that prunes (Argo CD or Flux with pruning, kubectl apply --prune) would delete widgets.example.com and, with it, all 2 objects of it"},
			fix:     []string{"keep widgets.example.com in the manifests while any object of it is to stay", "to retire it"}},
		{name: "an Argo CD application that prunes",
			annotations: m{"argocd.argoproj.io/tracking-id": "lb:apiextensions.k8s.io/CustomResourceDefinition:/widgets.example.com"}, live: two(DroppedLive{SameSource: "Argo CD application lb"}), severity: lifecycle.SeverityError,
			message: []string{"Argo CD application lb syncing with prune deletes widgets.example.com and, with it, all 2 objects of it"}},
		{name: "an Argo CD application told Prune=false leaves it",
			labels: m{"argocd.argoproj.io/instance": "lb"}, annotations: m{"argocd.argoproj.io/sync-options": "ServerSideApply=true,Prune=false"}, live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityWarning,
			message: []string{"Argo CD application lb (the CRD has sync-options Prune=false), a plain kubectl apply leaves it"}},
		{name: "a Flux Kustomization that prunes",
			labels: m{"kustomize.toolkit.fluxcd.io/name": "infra", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityError,
			message: []string{"Flux Kustomization infra in flux-system with prune: true deletes widgets.example.com"}},
		{name: "a Flux Kustomization told not to prune it",
			labels: m{"kustomize.toolkit.fluxcd.io/name": "infra", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, annotations: m{"kustomize.toolkit.fluxcd.io/prune": "disabled"},
			live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityWarning,
			message: []string{"(the CRD has kustomize.toolkit.fluxcd.io/prune: disabled), a plain kubectl apply leaves it"}},
		{name: "kubectl apply --server-side applied it: with --prune it deletes it",
			ssa: "kubectl", live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityError,
			message: []string{"kubectl apply --prune deletes widgets.example.com and, with it, all 2 objects of it; a plain kubectl apply leaves it"},
			not:     []string{"nothing on it tells"},
			fix:     []string{"keep widgets.example.com in the manifests while any object of it is to stay", "to retire it"}},
		{name: "an ApplySet",
			labels: m{"applyset.kubernetes.io/part-of": "applyset-abc-v1"}, live: two(DroppedLive{SameGroup: true}), severity: lifecycle.SeverityError,
			message: []string{"kubectl apply --prune --applyset (ApplySet applyset-abc-v1) deletes widgets.example.com"}},
		{name: "another group, nothing tells: a warning, as before",
			live: two(DroppedLive{}), severity: lifecycle.SeverityWarning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := named(crd(nil, "v1:served,storage"), "example.com", "", "")
			old.Labels, old.Annotations = tc.labels, tc.annotations
			if tc.ssa != "" {
				old.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: tc.ssa, Operation: metav1.ManagedFieldsOperationApply}}
			}
			f := Dropped(old, nil, tc.live)
			if f.Severity != tc.severity || f.Rule != "crdDropped" || f.Kind != results.FindingDropped || f.CRD != "widgets.example.com" {
				t.Errorf("got %s %s %s %s", f.Severity, f.Kind, f.Rule, f.CRD)
			}
			for _, want := range tc.message {
				if !strings.Contains(f.Message, want) {
					t.Errorf("message %q\nlacks %q", f.Message, want)
				}
			}
			for _, no := range tc.not {
				if strings.Contains(f.Message, no) {
					t.Errorf("message %q\nhas %q", f.Message, no)
				}
			}
			if tc.fix == nil {
				return
			}
			if len(f.Fix) != len(tc.fix) {
				t.Fatalf("fix %+v, want %d steps", f.Fix, len(tc.fix))
			}
			for i, want := range tc.fix {
				if !strings.Contains(f.Fix[i].Text, want) {
					t.Errorf("fix %d: %q\nlacks %q", i+1, f.Fix[i].Text, want)
				}
			}
			if strings.Contains(f.Fix[0].Text, "annotate") != strings.Contains(strings.Join(tc.fix, " "), "annotate") {
				t.Errorf("fix 1 %q: the keep annotation offered where it should not be, or missing", f.Fix[0].Text)
			}
		})
	}
}
