package migration

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apiextensions.k8s.io/v1", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(fields)}
}

const (
	apply  = metav1.ManagedFieldsOperationApply
	update = metav1.ManagedFieldsOperationUpdate
	// versions is spec.versions, an atomic list, as managedFields name it.
	versions    = `{"f:spec":{"f:versions":{}}}`
	ownerFields = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:group":{},"f:names":{"f:kind":{}}}}`
	ownerAll    = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:group":{},"f:names":{"f:kind":{}},"f:versions":{}}}`
	verified    = `{"f:metadata":{"f:annotations":{"f:crdversion.kubectl.io/verified-v1":{}}}}`
	recordAndV  = `{"f:metadata":{"f:annotations":{"f:crdversion.kubectl.io/steps":{},"f:crdversion.kubectl.io/verified-v1":{}}},"f:spec":{"f:versions":{}}}`
)

func TestFieldsReturned(t *testing.T) {
	tests := []struct {
		name        string
		before, now []metav1.ManagedFieldsEntry
		want        []metav1.ManagedFieldsEntry
		changed     bool
	}{{
		name:    "the owner's spec.versions goes back; the record of steps is let go, a verification kept",
		before:  []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll)},
		now:     []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, recordAndV)},
		want:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll), entry(cluster.FieldManager, update, verified)},
		changed: true,
	}, {
		name:    "an owner the update emptied is put back",
		before:  []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry("helm", update, versions)},
		now:     []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, versions)},
		want:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry("helm", update, versions)},
		changed: true,
	}, {
		name:    "every manager that shared the field gets it back",
		before:  []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll), entry("kustomize-controller", apply, versions)},
		now:     []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, recordAndV)},
		want:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll), entry(cluster.FieldManager, update, verified), entry("kustomize-controller", apply, versions)},
		changed: true,
	}, {
		name:    "a spec field nobody else held is let go: the plugin owns no spec",
		before:  []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, versions)},
		now:     []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, recordAndV)},
		want:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, verified)},
		changed: true,
	}, {
		name:   "annotations alone: nothing to return",
		before: []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll)},
		now:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll), entry(cluster.FieldManager, update, verified)},
		want:   []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll), entry(cluster.FieldManager, update, verified)},
	}, {
		name:   "no entry of the plugin's (another writer took the fields meanwhile)",
		before: []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll)},
		now:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry("argocd-controller", update, versions)},
		want:   []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry("argocd-controller", update, versions)},
	}, {
		// An apply entry is one a manager, whatever apiVersion it applied
		// at last: the fields go back into it, not into a second one.
		name:    "an owner's apply entry found by its manager, not its apiVersion",
		before:  []metav1.ManagedFieldsEntry{atVersion(entry("kubectl", apply, ownerAll), "apiextensions.k8s.io/v1beta1")},
		now:     []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, versions)},
		want:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll)},
		changed: true,
	}, {
		name:    "status is another subresource's: left alone",
		before:  []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll)},
		now:     []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerFields), entry(cluster.FieldManager, update, versions), withSub(entry(cluster.FieldManager, update, `{"f:status":{"f:storedVersions":{}}}`), "status")},
		want:    []metav1.ManagedFieldsEntry{entry("kubectl", apply, ownerAll), withSub(entry(cluster.FieldManager, update, `{"f:status":{"f:storedVersions":{}}}`), "status")},
		changed: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed, err := fieldsReturned(tt.before, tt.now, cluster.FieldManager)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if g, w := canonical(t, got), canonical(t, tt.want); g != w {
				t.Errorf("managedFields\n got %s\nwant %s", g, w)
			}
		})
	}
}

func atVersion(e metav1.ManagedFieldsEntry, apiVersion string) metav1.ManagedFieldsEntry {
	e.APIVersion = apiVersion
	return e
}

func withSub(e metav1.ManagedFieldsEntry, sub string) metav1.ManagedFieldsEntry {
	e.Subresource = sub
	return e
}

// canonical is entries with their field sets re-encoded, so that equal sets
// compare equal whatever their key order.
func canonical(t *testing.T, entries []metav1.ManagedFieldsEntry) string {
	t.Helper()
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		s, err := fieldSet(e)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		e.FieldsV1 = metav1.NewFieldsV1(string(raw))
		out[i] = e
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
