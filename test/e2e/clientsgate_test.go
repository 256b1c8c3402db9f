package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A controller that applies at v1beta1 in the same second as the plugin's
// prune (managedFields times are whole seconds) may have written after it:
// the step to blocked counts it as a client and is refused, naming it, as
// the same write a second later is. The second is set on the entry itself,
// so the case does not hang on the clock.
func TestBlockedCountsAWriteInThePrunesSecond(t *testing.T) {
	e := newEnv(t, demoObjects)
	e.plugin("promote", "backups", "v1").mustCode(t, 0) // bridge
	e.plugin("promote", "backups", "v1").mustCode(t, 0) // deprecated
	e.plugin("migrate", "backups", "--switch-grace=0", "-q").mustCode(t, 0)
	pruned := prunedAt(t, e.crd(backups))

	f := filepath.Join(t.TempDir(), "backup.yaml")
	body := "apiVersion: storage.example.com/v1beta1\nkind: Backup\nmetadata:\n  name: team-a-latest\n  namespace: team-a\nspec:\n  schedule: '0 5 * * *'\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	e.kubectl("apply", "--server-side", "--field-manager=team-a-controller", "-f", f).mustCode(t, 0)
	// The controller's entry dated the prune's second, as the API server dates a write in it: an
	// update that changes only managedFields keeps the times sent. Another writer in between (the
	// entry re-dated) is met by dating it again, up to a deadline.
	objs := e.clients.Dynamic.Resource(schema.GroupVersionResource{Group: "storage.example.com", Version: "v1", Resource: "backups"}).Namespace("team-a")
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		obj, err := objs.Get(ctx, "team-a-latest", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mf := obj.GetManagedFields()
		dated := false
		for i := range mf {
			if mf[i].Manager == "team-a-controller" && mf[i].APIVersion == "storage.example.com/v1beta1" {
				if mf[i].Time != nil && mf[i].Time.Time.Equal(pruned) {
					return true, nil
				}
				mf[i].Time, dated = &metav1.Time{Time: pruned}, true
			}
		}
		if !dated {
			return false, fmt.Errorf("no entry of team-a-controller at v1beta1: %+v", mf)
		}
		obj.SetManagedFields(mf)
		if _, err := objs.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "e2e-dating"}); err != nil && !apierrors.IsConflict(err) {
			return false, err
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("setup: dating team-a-controller's entry at the prune's second %v: %v", pruned, err)
	}

	before := e.crdVersions()
	// --despite-clients=requests: the deprecated-API metric is shared by this binary's API servers.
	r := e.plugin("promote", "backups", "v1", "--to", "blocked", "--despite-clients=requests").mustCode(t, 3)
	oneError(t, r, "stop serving v1beta1 of backups.storage.example.com: still in use by team-a-controller")
	sameCRDs(t, before, e.crdVersions())
	if v := specVersion(e.crd(backups), "v1beta1"); v == nil || !v.Served {
		t.Errorf("v1beta1 after the refusal: %+v, want still served", v)
	}
}
