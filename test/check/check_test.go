// Package check_test runs the upgrade check against the in-process API
// server: the live objects it validates are real ones.
package check_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/check"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

func gadgetSchema(edit func(spec *apiextensionsv1.JSONSchemaProps)) *apiextensionsv1.CustomResourceValidation {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name": {Type: "string"}, "replicas": {Type: "integer"}}}
	if edit != nil {
		edit(&spec)
	}
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}
}

// startSandbox starts a sandbox: the fixtures' clients and the plugin's.
func startSandbox(t *testing.T) (fixtures.Clients, migration.Clients) {
	t.Helper()
	cfg := sandbox.StartT(t, sandbox.Options{}).RestConfig()
	cfg.QPS, cfg.Burst = -1, 0
	fx, err := fixtures.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := migration.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fx, c
}

// liveGadgets starts a sandbox with a gadgets CRD (v1, gadgetSchema) and
// its objects.
func liveGadgets(t *testing.T, objs []fixtures.Object) (migration.Clients, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	fx, c := startSandbox(t)
	live := fixtures.CRD("example.com", "Gadget", "gadgets", apiextensionsv1.NamespaceScoped, false, fixtures.Version{Name: "v1", Served: true, Storage: true})
	live.Spec.Versions[0].Schema = gadgetSchema(nil)
	if _, err := fx.CreateCRD(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	if err := fx.CreateObjects(t.Context(), schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}, "Gadget", objs); err != nil {
		t.Fatal(err)
	}
	return c, live
}

// Live objects against a tighter schema: exactly the objects that break
// it, no others, and ratcheting respected: an object the new schema
// refuses but an unchanged update lets through is a warning; one that even
// an unchanged update is refused (a transition rule) is an error.
func TestCheckValidatesLiveObjects(t *testing.T) {
	c, live := liveGadgets(t, []fixtures.Object{
		{Namespace: "a", Name: "clean", Spec: map[string]any{"name": "short", "replicas": int64(1)}},
		{Namespace: "a", Name: "long-name", Spec: map[string]any{"name": "a-name-longer-than-ten", "replicas": int64(1)}},
		{Namespace: "b", Name: "six", Spec: map[string]any{"name": "ok", "replicas": int64(6)}},
		{Namespace: "b", Name: "nine", Spec: map[string]any{"name": "ok", "replicas": int64(9)}},
	})
	next := live.DeepCopy()
	next.Spec.Versions[0].Schema = gadgetSchema(func(spec *apiextensionsv1.JSONSchemaProps) {
		name := spec.Properties["name"]
		name.MaxLength = ptr.To[int64](10)
		spec.Properties["name"] = name
		spec.XValidations = apiextensionsv1.ValidationRules{
			{Rule: "self.replicas <= 5", Message: "at most 5 replicas"},
			// A transition rule is never ratcheted: at 8 or more the next
			// write must change replicas, so an unchanged one is refused.
			{Rule: "self.replicas < 8 || self.replicas != oldSelf.replicas", Message: "8 or more replicas must be lowered"},
		}
	})

	found, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{next}, check.Options{Objects: true, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var objects, rules []string
	for _, f := range found {
		switch f.Kind {
		case results.FindingObjects:
			objects = append(objects, fmt.Sprintf("%s %s %s", f.Severity, f.Object, f.Path))
		default:
			rules = append(rules, f.Rule)
		}
	}
	want := []string{"warning a/long-name spec.name", "warning b/six spec", "error b/nine spec"}
	slices.Sort(objects)
	slices.Sort(want)
	if strings.Join(objects, "; ") != strings.Join(want, "; ") {
		t.Errorf("objects found: %q\nwant %q", objects, want)
	}
	for _, f := range found {
		if f.Object == "b/nine" && !strings.Contains(f.Message, "8 or more replicas must be lowered") {
			t.Errorf("b/nine: %s", f.Message)
		}
	}
	slices.Sort(rules)
	if strings.Join(rules, ",") != "maxLengthTightened,validationRuleAdded,validationRuleAdded" {
		t.Errorf("schema findings %v", rules)
	}
}

// A new required field on a CRD with many objects: one finding that names
// the first objects and counts the rest, every name in the finding, and
// no "<nil>: Invalid value: null" line of the API server's.
func TestCheckGroupsObjectsThatFailAlike(t *testing.T) {
	const n = 40
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "a", Name: fmt.Sprintf("g-%02d", i), Spec: map[string]any{"name": "x", "replicas": int64(1)}}
	}
	c, live := liveGadgets(t, objs)
	next := live.DeepCopy()
	next.Spec.Versions[0].Schema = gadgetSchema(func(spec *apiextensionsv1.JSONSchemaProps) {
		spec.Properties["owner"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		spec.Required = []string{"owner"}
		spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.replicas <= 5"}}
	})
	found, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{next}, check.Options{Objects: true, PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	var objects []results.Finding
	for _, f := range found {
		if f.Kind == results.FindingObjects {
			objects = append(objects, f)
		}
	}
	if len(objects) != 1 {
		t.Fatalf("%d findings about objects, want one for all %d: %+v", len(objects), n, objects)
	}
	f := objects[0]
	if f.Count != n || len(f.Objects) != n || f.Object != "a/g-00, a/g-01, a/g-02, and 37 more" || f.Path != "spec.owner" {
		t.Errorf("count %d, %d names, object %q, path %q", f.Count, len(f.Objects), f.Object, f.Path)
	}
	if strings.Contains(f.Message, "<nil>") || !strings.Contains(f.Message, "Required value") {
		t.Errorf("message %q", f.Message)
	}

	// A rule every live object passes fails nothing: a note that says so.
	passing := live.DeepCopy()
	passing.Spec.Versions[0].Schema = gadgetSchema(func(spec *apiextensionsv1.JSONSchemaProps) {
		spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.replicas <= 5"}}
	})
	found, err = check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{passing}, check.Options{Objects: true, PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Severity != lifecycle.SeverityNote || !strings.HasSuffix(found[0].Message, fmt.Sprintf("all %d live objects pass it", n)) {
		t.Errorf("a rule every object passes: %+v", found)
	}
	// A CRD author's release rules keep it an error.
	found, err = check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{passing}, check.Options{Objects: true, Policy: true, PageSize: 7})
	if err != nil || len(found) != 1 || found[0].Severity != lifecycle.SeverityError {
		t.Errorf("with Policy: %+v %v", found, err)
	}
}

// A new schema that no longer lists a field live objects hold: the API
// server would prune it. At the storage version that is data gone (an
// error naming the objects that hold it, and the schema's fieldRemoved
// stays a warning, not a note that every object passes); at a version
// only its clients read (v2, new here) a warning. An object holding
// nothing the schema drops is not named.
func TestCheckSaysWhatLiveObjectsLoseToPruning(t *testing.T) {
	c, live := liveGadgets(t, []fixtures.Object{
		{Namespace: "a", Name: "full", Spec: map[string]any{"name": "x", "replicas": int64(2)}},
		{Namespace: "a", Name: "bare", Spec: map[string]any{"name": "y"}},
	})
	next := live.DeepCopy()
	next.Spec.Versions[0].Schema = gadgetSchema(func(spec *apiextensionsv1.JSONSchemaProps) { delete(spec.Properties, "replicas") })
	v2 := next.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	v2.Schema = gadgetSchema(func(spec *apiextensionsv1.JSONSchemaProps) { delete(spec.Properties, "name") })
	next.Spec.Versions = append(next.Spec.Versions, *v2)

	found, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{next}, check.Options{Objects: true, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		switch {
		case f.Rule == "objectLosesFields":
			got = append(got, fmt.Sprintf("%s %s %s %s", f.Severity, f.Version, f.Path, strings.Join(f.Objects, "+")))
			if f.Severity == lifecycle.SeverityError && (len(f.Fix) == 0 || !strings.Contains(f.Message, "gone from etcd at the object's next write")) {
				t.Errorf("the error says what is lost and what to do: %+v", f)
			}
		case f.Rule == "fieldRemoved" && f.Version == "v1" && f.Severity != lifecycle.SeverityWarning:
			t.Errorf("fieldRemoved with an object that holds the field: %s %q", f.Severity, f.Message)
		}
	}
	want := []string{"error v1 spec.replicas a/full", "warning v2 spec.name a/bare+a/full"}
	slices.Sort(got)
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("objects losing fields: %q\nwant %q", got, want)
	}
}

// A CRD applied client-side (it carries kubectl's last-applied annotation)
// whose next manifest is past 256 KiB: kubectl apply -f writes the whole
// manifest into that annotation, and the API server refuses it. The server-
// side dry run check sends takes the manifest, so before, check found
// nothing; the API server's own answer to the write client-side apply
// makes is the judge.
func TestCheckSaysClientSideApplyIsRefusedPastTheAnnotationLimit(t *testing.T) {
	c, live := liveGadgets(t, nil)
	live, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), live.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applied := live.DeepCopy()
	applied.Annotations = map[string]string{check.LastAppliedAnnotation: `{"kind":"CustomResourceDefinition"}`}
	if live, err = c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Update(t.Context(), applied, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next := live.DeepCopy()
	next.Annotations, next.ResourceVersion, next.ManagedFields = nil, "", nil
	next.Spec.Versions[0].Schema = gadgetSchema(func(spec *apiextensionsv1.JSONSchemaProps) {
		spec.Description = strings.Repeat("Every field of the gadget, described at length. ", 6000)
	})

	found, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{next}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(found, func(f results.Finding) bool { return f.Rule == "lastAppliedTooLong" })
	if i < 0 || found[i].Severity != lifecycle.SeverityError || !strings.Contains(render.Advice(found[i].Fix[0]), "kubectl apply --server-side") {
		t.Fatalf("findings %+v: want lastAppliedTooLong, an error", found)
	}
	// What kubectl apply -f sends: the new manifest with itself in the
	// annotation. The API server refuses it.
	raw, err := json.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	sent := next.DeepCopy()
	sent.ResourceVersion = live.ResourceVersion
	sent.Annotations = map[string]string{check.LastAppliedAnnotation: string(raw)}
	_, err = c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Update(t.Context(), sent, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "Too long") {
		t.Fatalf("the API server's answer to client-side apply: %v, want it refused as too long", err)
	}
}

// The CRD's owner applies it server-side (kubectl apply --server-side, field
// manager kubectl); then the plugin's step, an update, takes spec.versions
// (an atomic list). The owner's next apply of its manifest is a conflict:
// check's update dry run never met it, so check said nothing. Sent as the
// owner sends it, the manifest is found refused — and the API server's own
// answer to the owner's apply is the conflict.
func TestCheckSendsTheManifestAsItsServerSideApplyOwnerDoes(t *testing.T) {
	sb := sandbox.StartT(t, sandbox.Options{})
	c, err := migration.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	manifest := fixtures.CRD("example.com", "Gadget", "gadgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true, Storage: true}, fixtures.Version{Name: "v1beta1", Served: true})
	manifest.APIVersion, manifest.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	body, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	crds := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	apply := func(dryRun bool) error {
		opts := metav1.PatchOptions{FieldManager: "kubectl"}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := crds.Patch(t.Context(), manifest.Name, types.ApplyPatchType, body, opts)
		return err
	}
	if err := apply(false); err != nil {
		t.Fatal(err)
	}
	// Served before anything reads its objects, as an installed CRD is.
	fx, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.WaitEstablished(t.Context(), manifest.Name); err != nil {
		t.Fatal(err)
	}
	// As promote --to deprecated writes it; the API server's own
	// controllers write the status meanwhile.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := crds.Get(t.Context(), manifest.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		live.Spec.Versions[1].Deprecated = true
		_, err = crds.Update(t.Context(), live, metav1.UpdateOptions{FieldManager: "kubectl-crdversion"})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	found, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{manifest}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(found, func(f results.Finding) bool { return f.Rule == "applyConflict" })
	if i < 0 || found[i].Severity != lifecycle.SeverityError || !strings.Contains(found[i].Message, "kubectl apply --server-side") {
		t.Fatalf("findings %+v: want the owner's apply found refused", found)
	}
	if err := apply(false); !apierrors.IsConflict(err) {
		t.Fatalf("the owner's apply: %v, want the API server's conflict", err)
	}
}

// check's dry-run applies as the CRD's owners write nothing: a manifest
// that changes spec.versions, sent as two server-side apply owners (one
// with no conflict), leaves the live CRD's resourceVersion, spec and
// managedFields as they were.
func TestCheckAppliesAsTheOwnersPersistNothing(t *testing.T) {
	sb := sandbox.StartT(t, sandbox.Options{})
	c, err := migration.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	live := fixtures.CRD("example.com", "Gadget", "gadgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true, Storage: true}, fixtures.Version{Name: "v1beta1", Served: true})
	live.APIVersion, live.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	body, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	crds := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	for _, m := range []string{"kubectl", "argocd-controller"} {
		if _, err := crds.Patch(t.Context(), live.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: m, Force: ptr.To(true)}); err != nil {
			t.Fatal(err)
		}
	}
	// The API server's own status writes come first, so a later change of
	// the resourceVersion is check's.
	fx, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	before, err := fx.WaitEstablished(t.Context(), live.Name)
	if err != nil {
		t.Fatal(err)
	}
	manifest := live.DeepCopy()
	manifest.Spec.Versions[1].Deprecated = true
	manifest.Spec.Versions[1].Served = false
	if _, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{manifest}, check.Options{}); err != nil {
		t.Fatal(err)
	}
	after, err := crds.Get(t.Context(), live.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || after.Generation != before.Generation || len(after.ManagedFields) != len(before.ManagedFields) ||
		after.Spec.Versions[1].Deprecated || !after.Spec.Versions[1].Served {
		t.Fatalf("check changed the CRD: resourceVersion %s → %s, generation %d → %d, managedFields %d → %d, v1beta1 %+v",
			before.ResourceVersion, after.ResourceVersion, before.Generation, after.Generation, len(before.ManagedFields), len(after.ManagedFields), after.Spec.Versions[1])
	}
}

// A live CRD whose short name another CRD holds is never established: the
// API server serves none of its objects. check says so, and exits 3 for a
// manifest that keeps the names, instead of failing on the 404 of its
// objects' list; status gives the reason from the CRD's conditions.
func TestCheckOfACRDTheAPIServerDoesNotServe(t *testing.T) {
	sb := sandbox.StartT(t, sandbox.Options{})
	c, err := migration.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	holder := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false, fixtures.Version{Name: "v1", Served: true, Storage: true})
	holder.Spec.Names.ShortNames = []string{"wg"}
	if _, err := fx.CreateCRD(t.Context(), holder); err != nil {
		t.Fatal(err)
	}
	clash := fixtures.CRD("example.com", "Gadget", "gadgets", apiextensionsv1.NamespaceScoped, false, fixtures.Version{Name: "v1", Served: true, Storage: true})
	clash.Spec.Names.ShortNames = []string{"wg"}
	crds := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(t.Context(), clash, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var live *apiextensionsv1.CustomResourceDefinition
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		live, err = crds.Get(ctx, clash.Name, metav1.GetOptions{})
		return err == nil && stages.NotServed(live) != "", err
	}); err != nil {
		t.Fatalf("the clashing CRD never showed its names refused: %v", err)
	}
	if why := stages.Assess(live).NotServed; !strings.Contains(why, "NamesAccepted=False") {
		t.Errorf("status's reason %q, want the NamesAccepted condition", why)
	}
	found, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{clash}, check.Options{Objects: true})
	if err != nil {
		t.Fatalf("check of a CRD not served: %v, want findings", err)
	}
	i := slices.IndexFunc(found, func(f results.Finding) bool { return f.Rule == "crdNotServed" })
	if i < 0 || found[i].Severity != lifecycle.SeverityError {
		t.Fatalf("findings %+v: want crdNotServed, an error", found)
	}
}
