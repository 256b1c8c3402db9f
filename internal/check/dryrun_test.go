package check

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
)

// The API server's controllers write a CRD's status between check's read
// and its dry run: the conflict that follows is theirs, not a refusal of
// the manifest. Only a CRD that keeps changing is an error, never a finding.
func TestDryRunApplySendsAgainOnAConflict(t *testing.T) {
	gr := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	for _, tc := range []struct {
		name      string
		conflicts int
		wantErr   bool
	}{
		{name: "one status write between the read and the dry run", conflicts: 1},
		{name: "a CRD that keeps changing", conflicts: 100, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com", ResourceVersion: "4"}}
			client := fake.NewClientset(live.DeepCopy())
			updates := 0
			client.PrependReactor("update", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
				updates++
				if updates <= tc.conflicts {
					return true, nil, apierrors.NewConflict(gr, live.Name, nil)
				}
				return true, a.(clienttesting.UpdateAction).GetObject(), nil
			})
			n := live.DeepCopy()
			n.Spec.Group = "example.com"
			refusal, err := dryRunApply(t.Context(), client, live, n)
			if refusal != nil {
				t.Fatalf("refusal %v: a conflict is not the API server refusing the manifest", refusal)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v after %d updates, want an error: %v", err, updates, tc.wantErr)
			}
			if !tc.wantErr && updates != tc.conflicts+1 {
				t.Fatalf("%d updates, want %d", updates, tc.conflicts+1)
			}
		})
	}
}
