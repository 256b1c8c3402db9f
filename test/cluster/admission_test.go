package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/admitwebhook"
)

// Admission on the way of migrate's writes, through the real API server:
// a mutating policy that changes what the write was meant to leave alone,
// a validating policy and a webhook that deny it (the webhook with the
// codes of a conflict and of a NotFound). Each object concerned is named
// in the report, nothing is pruned, exit 3; etcd shows what was written.

// A MutatingAdmissionPolicy sets spec.color on the UPDATE of labelled
// widgets: the plugin's writes of those objects are accepted, changed, and
// reported as ChangedByWrite, one row each; nothing is pruned.
func TestMigrateReportsObjectsAMutatingPolicyChanges(t *testing.T) {
	e := newEnv(t, shared)
	const label = "crdversion.test/paint"
	w := e.installWidgets("admmap", 5, false, "admmap-a", "admmap-b")
	painted := []string{"admmap-a/w-0001", "admmap-a/w-0003", "admmap-b/w-0002"}
	// Labelled while v1beta1 is still storage: the label's write keeps
	// them at v1beta1, as every other object.
	e.label(w, label, "red", painted...)
	e.switchToV1(w)
	if got, want := e.stored(w), map[string]int{w.group + "/v1beta1": 10}; !maps.Equal(got, want) {
		t.Fatalf("before: etcd holds %v, want %v", got, want)
	}

	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "paint-" + w.group},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules:  widgetUpdates(w),
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "red"}},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{spec: Object.spec{color: "red"}}`},
			}},
			FailurePolicy:      &fail,
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy.Name},
	}
	policies := e.kube.AdmissionregistrationV1().MutatingAdmissionPolicies()
	if _, err := policies.Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = policies.Delete(context.Background(), policy.Name, metav1.DeleteOptions{}) })
	bindings := e.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	if _, err := bindings.Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), binding.Name, metav1.DeleteOptions{}) })
	// The API server's policy informer picks the policy up in a moment: a
	// dry-run update of a painted object shows when it mutates.
	e.waitAdmission("the mutating policy", func(ctx context.Context) (bool, string) {
		got, err := e.dryRunUpdate(ctx, w, "admmap-a", "w-0001")
		if err != nil {
			return false, err.Error()
		}
		color, _, _ := unstructured.NestedString(got.Object, "spec", "color")
		return color == "red", "spec.color " + color
	})

	r := mustCode(t, e.plugin("migrate", w.name(), "--switch-grace=0s"), 3)
	// Every object was written at v1 (the changed ones too), so the prune
	// is proven and made; the changes are what the exit code and the table
	// tell.
	contains(t, "migrate stdout", r.Stdout, "10 objects at v1", "7 re-stored", "0 failed, 3 changed by the write", "v1beta1,v1 → v1 (pruned)")
	rows := failureRows(r.Stdout, w)
	for _, obj := range painted {
		f, ok := rows[obj]
		switch {
		case !ok:
			t.Errorf("%s is not in the failures table:\n%s", obj, r.Stdout)
		case f.reason != "ChangedByWrite" || !strings.Contains(f.message, "changed its generation (1 → 2): mutating admission changed the spec"):
			t.Errorf("%s reported as %+v, want ChangedByWrite naming the spec's change", obj, f)
		}
	}
	if len(rows) != len(painted) {
		t.Errorf("failures table has %d rows, want only the %d painted objects:\n%s", len(rows), len(painted), r.Stdout)
	}
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
		t.Errorf("storedVersions %v, want [v1]", got)
	}
	// The changed objects were written (at v1, with the policy's change):
	// what the report is there to tell.
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("after: etcd holds %v, want %v", got, want)
	}
	for _, ns := range w.namespaces {
		for i := range w.perNS {
			name := fmt.Sprintf("w-%04d", i)
			want := "blue"
			if slices.Contains(painted, ns+"/"+name) {
				want = "red"
			}
			if got := e.color(w, ns, name); got != want {
				t.Errorf("%s/%s: spec.color %q, want %q", ns, name, got, want)
			}
		}
	}
}

// A ValidatingAdmissionPolicy denies the UPDATE of labelled widgets: each
// of them is a failure with the API server's code for the denial (422
// Invalid, the default reason of a policy's validation), the others are
// re-stored, nothing is pruned.
func TestMigrateReportsObjectsAValidatingPolicyDenies(t *testing.T) {
	e := newEnv(t, shared)
	const label = "crdversion.test/frozen"
	w := e.installWidgets("admvap", 5, false, "admvap-a", "admvap-b")
	frozen := []string{"admvap-a/w-0001", "admvap-a/w-0004", "admvap-b/w-0002"}
	e.label(w, label, "true", frozen...)
	e.switchToV1(w)
	if got, want := e.stored(w), map[string]int{w.group + "/v1beta1": 10}; !maps.Equal(got, want) {
		t.Fatalf("before: etcd holds %v, want %v", got, want)
	}

	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-" + w.group},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules:  widgetUpdates(w),
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `object.metadata.labels["` + label + `"] != "true"`,
				Message:    "frozen widgets may not be updated",
			}},
			FailurePolicy: &fail,
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	vaps := e.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := vaps.Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vaps.Delete(context.Background(), policy.Name, metav1.DeleteOptions{}) })
	bindings := e.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if _, err := bindings.Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), binding.Name, metav1.DeleteOptions{}) })
	e.waitAdmission("the validating policy", func(ctx context.Context) (bool, string) {
		_, err := e.dryRunUpdate(ctx, w, "admvap-a", "w-0001")
		if err == nil {
			return false, "a dry-run update of a frozen object was allowed"
		}
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "frozen widgets may not be updated"), err.Error()
	})

	r := mustCode(t, e.plugin("migrate", w.name(), "--switch-grace=0s"), 3)
	contains(t, "migrate stdout", r.Stdout, "10 objects at v1", "7 re-stored", "0 gone, 0 changed meanwhile, 3 failed", "not pruned")
	if strings.Contains(r.Stdout, "changed by the write") {
		t.Errorf("a denied write counted as changed by the write:\n%s", r.Stdout)
	}
	rows := failureRows(r.Stdout, w)
	for _, obj := range frozen {
		f, ok := rows[obj]
		switch {
		case !ok:
			t.Errorf("%s is not in the failures table:\n%s", obj, r.Stdout)
		case f.code != "422" || f.reason != string(metav1.StatusReasonInvalid) ||
			!strings.Contains(f.message, "ValidatingAdmissionPolicy '"+policy.Name+"'") || !strings.Contains(f.message, "frozen widgets may not be updated"):
			t.Errorf("%s reported as %+v, want 422 Invalid with the policy's message", obj, f)
		}
	}
	if len(rows) != len(frozen) {
		t.Errorf("failures table has %d rows, want only the %d frozen objects:\n%s", len(rows), len(frozen), r.Stdout)
	}
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1"}) {
		t.Errorf("storedVersions %v, want both (nothing pruned)", got)
	}
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 7, w.group + "/v1beta1": 3}; !maps.Equal(got, want) {
		t.Errorf("after: etcd holds %v, want %v", got, want)
	}
	for _, obj := range frozen {
		ns, name, _ := strings.Cut(obj, "/")
		if got := e.storedAt(w, ns, name); got != w.group+"/v1beta1" {
			t.Errorf("%s: stored at %q, want %s/v1beta1 (its write was denied)", obj, got, w.group)
		}
	}
}

// A validating webhook denies the UPDATE of some widgets with 409, 404 or 429,
// plain or dressed up as the API server's own Conflict and NotFound
// (reason, details naming the object, the registry's wording): none of
// them counts as "changed meanwhile" or "gone"; each is a failure with its
// code, nothing is pruned, and the denied objects stay at v1beta1.
func TestMigrateReportsWebhookDenialsWith409And404(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("admwh", 6, true, "admwh-a", "admwh-b")
	gr := w.group
	details := func(name string) *metav1.StatusDetails {
		return &metav1.StatusDetails{Name: name, Group: gr, Kind: "widgets"}
	}
	deny := map[string]metav1.Status{
		"w-0001": {Code: 409, Message: "w-0001 is locked"},
		"w-0002": {Code: 404, Message: "w-0002 has no owner"},
		"w-0003": {Code: 409, Reason: metav1.StatusReasonConflict, Details: details("w-0003"),
			Message: fmt.Sprintf("Operation cannot be fulfilled on widgets.%s %q: the object has been modified; please apply your changes to the latest version and try again", gr, "w-0003")},
		"w-0004": {Code: 404, Reason: metav1.StatusReasonNotFound, Details: details("w-0004"),
			Message: fmt.Sprintf("widgets.%s %q not found", gr, "w-0004")},
		// 429 is the server's way to say "slow down", but a denial that
		// only carries the code is about the object: reported, not retried
		// for ever.
		"w-0005": {Code: 429, Reason: metav1.StatusReasonTooManyRequests, Message: "w-0005 is rate-limited by policy"},
	}
	wh, err := admitwebhook.Start(deny)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Stop() })

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(10)
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + w.group},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deny." + w.group,
			ClientConfig:            wh.ClientConfig(),
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, Rule: widgetRule(w)}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}
	configs := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := configs.Create(t.Context(), config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = configs.Delete(context.Background(), config.Name, metav1.DeleteOptions{}) })
	e.waitAdmission("the validating webhook", func(ctx context.Context) (bool, string) {
		_, err := e.dryRunUpdate(ctx, w, "admwh-a", "w-0001")
		if err == nil {
			return false, "a dry-run update of w-0001 was allowed"
		}
		return apierrors.IsConflict(err) && strings.Contains(err.Error(), "w-0001 is locked"), err.Error()
	})
	if got := e.stored(w); got[w.group+"/v1beta1"] != 12 {
		t.Fatalf("before: etcd holds %v, want 12 at v1beta1", got)
	}

	r := mustCode(t, e.plugin("migrate", w.name(), "--switch-grace=0s"), 3)
	contains(t, "migrate stdout", r.Stdout, "12 objects at v1", "2 re-stored", "0 gone, 0 changed meanwhile, 10 failed", "not pruned")
	if strings.Contains(r.Stdout, "changed by the write") {
		t.Errorf("a denied write counted as changed by the write:\n%s", r.Stdout)
	}
	rows := failureRows(r.Stdout, w)
	for _, ns := range w.namespaces {
		for name, s := range deny {
			obj := ns + "/" + name
			f, ok := rows[obj]
			switch {
			case !ok:
				t.Errorf("%s is not in the failures table:\n%s", obj, r.Stdout)
			case f.code != fmt.Sprint(s.Code) || f.reason != string(s.Reason) ||
				!strings.Contains(f.message, `admission webhook "deny.`+w.group+`" denied the request: `+s.Message):
				t.Errorf("%s reported as %+v, want %d %q with the webhook's message", obj, f, s.Code, s.Reason)
			}
		}
	}
	for name := range deny {
		if n := wh.Denied(name); n < len(w.namespaces) {
			t.Errorf("the webhook denied %s %d times, want at least once in each of %d namespaces", name, n, len(w.namespaces))
		}
	}
	if len(rows) != len(deny)*len(w.namespaces) {
		t.Errorf("failures table has %d rows, want only the %d denied objects:\n%s", len(rows), len(deny)*len(w.namespaces), r.Stdout)
	}
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1"}) {
		t.Errorf("storedVersions %v, want both (nothing pruned)", got)
	}
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 2, w.group + "/v1beta1": 10}; !maps.Equal(got, want) {
		t.Errorf("after: etcd holds %v, want %v", got, want)
	}
	for _, ns := range w.namespaces {
		for name := range deny {
			if got := e.storedAt(w, ns, name); got != w.group+"/v1beta1" {
				t.Errorf("%s/%s: stored at %q, want %s/v1beta1 (its write was denied)", ns, name, got, w.group)
			}
		}
	}
}

// widgetRule is every version of the test's widgets.
func widgetRule(w widgets) admissionregistrationv1.Rule {
	scope := admissionregistrationv1.NamespacedScope
	return admissionregistrationv1.Rule{APIGroups: []string{w.group}, APIVersions: []string{"*"}, Resources: []string{"widgets"}, Scope: &scope}
}

// widgetUpdates matches the UPDATEs of the test's widgets, for a policy.
func widgetUpdates(w widgets) []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       widgetRule(w),
	}}}
}

// label sets a label on objects ("namespace/name"): a change of metadata,
// which leaves the generation alone.
func (e *env) label(w widgets, key, value string, objs ...string) {
	e.t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value)
	for _, obj := range objs {
		ns, name, _ := strings.Cut(obj, "/")
		if _, err := e.clients.Dynamic.Resource(w.gvr("v1beta1")).Namespace(ns).Patch(e.t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// switchToV1 makes v1 the storage version (installWidgets' switch, done
// after the test has written its objects at v1beta1).
func (e *env) switchToV1(w widgets) {
	e.t.Helper()
	if err := e.clients.SwitchStorageInEffect(e.t.Context(), w.name(), "v1"); err != nil {
		e.t.Fatal(err)
	}
}

// dryRunUpdate reads an object at v1 and sends it back unchanged as a
// server-side dry-run update: what admission makes of a write of it,
// nothing written.
func (e *env) dryRunUpdate(ctx context.Context, w widgets, ns, name string) (*unstructured.Unstructured, error) {
	ri := e.clients.Dynamic.Resource(w.gvr("v1")).Namespace(ns)
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return ri.Update(ctx, obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
}

// waitAdmission polls a probe until it says the admission configuration
// is in effect, for up to a minute; the probe says what it saw.
func (e *env) waitAdmission(what string, probe func(context.Context) (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, saw := probe(ctx)
		last = saw
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%s did not take effect within 1m: last probe: %s", what, last)
	}
}

func (e *env) color(w widgets, ns, name string) string {
	e.t.Helper()
	obj, err := e.clients.Dynamic.Resource(w.gvr("v1")).Namespace(ns).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	color, _, _ := unstructured.NestedString(obj.Object, "spec", "color")
	return color
}

// storedAt is the apiVersion one object is stored at in etcd.
func (e *env) storedAt(w widgets, ns, name string) string {
	e.t.Helper()
	got, err := e.c.StoredAPIVersion(e.t.Context(), w.group, "widgets", ns, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// failureRow is one row of migrate's failures table.
type failureRow struct{ code, reason, message string }

// failureRows reads migrate's failures table (CRD, OBJECT, CODE, REASON,
// MESSAGE; a cell may be empty) for the CRD, by object: each cell starts
// where its header does.
func failureRows(stdout string, w widgets) map[string]failureRow {
	out := map[string]failureRow{}
	var at []int
	for line := range strings.Lines(stdout) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "CRD ") && strings.Contains(line, " REASON ") {
			at = nil
			for _, h := range []string{"OBJECT", "CODE", "REASON", "MESSAGE"} {
				at = append(at, strings.Index(line, " "+h)+1)
			}
			continue
		}
		if at == nil || !strings.HasPrefix(line, w.name()+" ") || len(line) < at[3] {
			continue
		}
		cell := func(i int) string { return strings.TrimSpace(line[at[i]:at[i+1]]) }
		out[cell(0)] = failureRow{code: cell(1), reason: cell(2), message: line[at[3]:]}
	}
	return out
}
