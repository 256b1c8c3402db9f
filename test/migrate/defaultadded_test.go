package migrate_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// Longhorn v1.9's BackingImage: v1beta1, no longer served, keeps spec
// unchecked; v1beta2, the storage version, defaults spec.dataEngine to
// "v1". An object stored at v1beta1 without the field comes back from
// v1beta1→v1beta2→v1beta1 with dataEngine "v1": a default the new version
// adds, not a value lost (lifecycle.md rule 28). Migrate says so before the
// write, with the value, re-stores every object, and counts the generations
// the default moved as no change to look at (exit 0); it used to leave each
// as "loses data", then to count each as changed by the write (exit 3).
// v1.9.1 is not on the proxy; v1.9.0 has the same CRD at these versions.
// Conversion None, as in a cluster without Longhorn's webhook.
func TestMigrateTakesADefaultTheNewVersionAddsAsNoLoss(t *testing.T) {
	const n = 5
	crd := longhornBackingImages(t, "v1.9.0")
	sb := sandbox.StartT(t, sandbox.Options{})
	cfg := sb.RestConfig()
	cfg.QPS, cfg.Burst = -1, 0
	fx, err := fixtures.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// First the release before: v1beta1 served and storage, the objects stored there.
	before := crd.DeepCopy()
	for i := range before.Spec.Versions {
		v := &before.Spec.Versions[i]
		v.Served, v.Storage = true, v.Name == "v1beta1"
	}
	if _, err := fx.CreateCRD(t.Context(), before); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "longhorn-system", Name: "bi-" + string(rune('a'+i)),
			Spec: map[string]any{"sourceType": "download", "sourceParameters": map[string]any{"url": "https://example.com/image.qcow2"}, "checksum": ""}}
	}
	v1beta1 := schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta1", Resource: "backingimages"}
	if err := fx.CreateObjects(t.Context(), v1beta1, "BackingImage", objs); err != nil {
		t.Fatal(err)
	}
	// Then the release: v1beta1 unserved, v1beta2 storage, as Longhorn ships it.
	crds := fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		live.Spec.Versions = crd.Spec.Versions
		_, err = crds.Update(t.Context(), live, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stored := func() map[string]int {
		c, err := sb.StoredAPIVersions(t.Context(), "longhorn.io", "backingimages")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := stored(); c["longhorn.io/v1beta1"] != n {
		t.Fatalf("setup: etcd %v, want the %d objects at v1beta1", c, n)
	}
	clients := migration.Clients{Clients: cluster.Clients{CRDs: fx.CRDs, Dynamic: fx.Dynamic}}
	if clients.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if clients.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		t.Fatal(err)
	}

	o := opts()
	var told []string
	o.Notify = func(msg string) { told = append(told, msg) }
	res, err := migration.Migrate(t.Context(), clients, crd.Name, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Proofs {
		if len(p.Losses) > 0 {
			t.Errorf("proof %s: %s: %+v: a default the new version adds is not a loss", p.Version, p.Detail, p.Losses)
		}
	}
	if res.Lost != 0 || res.Failed != 0 || !res.Pruned {
		t.Errorf("%d lost, %d failed, pruned %v (%s): want every object re-stored and v1beta1 pruned", res.Lost, res.Failed, res.Pruned, res.PruneSkipped)
	}
	if c := stored(); len(c) != 1 || c["longhorn.io/v1beta2"] != n {
		t.Errorf("etcd after migrate: %v, want all %d at longhorn.io/v1beta2", c, n)
	}
	if !slices.ContainsFunc(told, func(m string) bool {
		return strings.Contains(m, "defaults") && strings.Contains(m, `spec.dataEngine="v1"`)
	}) {
		t.Errorf("notices %q: want the default spec.dataEngine and its value said before the write", told)
	}
	// Writing the default moved each object's generation, and nothing else:
	// no attention, so migrate exits 0 and upgrade walks on.
	if res.Changed != 0 || res.NeedsAttention(true) {
		t.Errorf("changed %d, failures %+v: a generation moved by the storage version's default alone needs attention", res.Changed, res.Failures)
	}
	if want := []results.DefaultWritten{{Field: "spec.dataEngine", Default: `"v1"`, Objects: n}}; !slices.Equal(res.DefaultsWritten, want) {
		t.Errorf("defaultsWritten %+v, want %+v", res.DefaultsWritten, want)
	}
	bad, err := sb.CheckStoredVersions(context.Background(), crd.Name, "longhorn.io", "backingimages")
	if err != nil || len(bad) > 0 {
		t.Errorf("etcd against storedVersions: %v %v", bad, err)
	}
}

// longhornBackingImages is backingimages.longhorn.io as longhorn-manager
// ships it at version (k8s/crds.yaml, a Helm template: its two template
// expressions replaced), with conversion None.
func longhornBackingImages(t *testing.T, version string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", "github.com/longhorn/longhorn-manager@"+version)
	// Outside any module, so the test module's go.mod and go.sum stay as they are.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, _ := cmd.Output()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Skipf("longhorn-manager@%s not available: %s %s", version, info.Error, out)
	}
	raw, err := os.ReadFile(filepath.Join(info.Dir, "k8s", "crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`labels: \{\{-[^}]*\}\}`).ReplaceAllString(string(raw), "labels:")
	text = regexp.MustCompile(`\{\{[^}]*\}\}`).ReplaceAllString(text, "longhorn-system")
	for _, doc := range strings.Split(text, "\n---") {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal([]byte(doc), &crd); err != nil || crd.Name != "backingimages.longhorn.io" {
			continue
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		return &crd
	}
	t.Fatalf("longhorn-manager@%s: no backingimages.longhorn.io in k8s/crds.yaml", version)
	return nil
}
