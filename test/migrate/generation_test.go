package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// The bridge check of v2 passes through a correct converter; right after
// it, before the step is written, a Helm upgrade points the CRD at a new
// converter that drops spec.port on the way to v1. The step's write then
// conflicts and is planned again, on the new CRD. Before, the plan reused
// the check made on the old one and stamped it with the new CRD's
// fingerprint: v2 was recorded bridged through a converter that loses
// every port. A check is about the generation it ran on: the step checks
// again, finds the loss, and records nothing.
func TestBridgeIsNotRecordedWithTheProofOfAnotherGeneration(t *testing.T) {
	s, lossy := endpointsThroughCorrectConverter(t)
	var upgrade sync.Once
	_, err := migration.Promote(t.Context(), s.clients, s.crd, migration.PromoteOptions{Version: "v2", Progress: func(_ string, done, total int64) {
		if done < endpointObjects || done != total {
			return
		}
		upgrade.Do(func() { s.upgradeConverter(t, lossy) })
	}})
	if !errors.Is(err, migration.ErrNotBridgeable) {
		t.Errorf("bridge across a converter upgrade: %v, want it checked again and refused", err)
	}
	now, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stages.VerificationFor(now, "v2"); ok {
		t.Errorf("v2 is recorded bridged through a converter that drops spec.port")
	}
}

const endpointObjects = 4

// endpointsThroughCorrectConverter is widgets at v1 (storage, spec.hostPort)
// and v2 (spec.host and spec.port) converted by a correct webhook, and a
// second webhook that drops spec.port on the way to v1.
func endpointsThroughCorrectConverter(t *testing.T) (*switched, *convwebhook.Webhook) {
	t.Helper()
	correct, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = correct.Stop() })
	lossy, err := convwebhook.Start(convwebhook.Lossy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lossy.Stop() })
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1", Served: true, Storage: true},
		fixtures.Version{Name: "v2", Served: true})
	crd.Spec.Conversion = correct.Conversion()
	objs := make([]fixtures.Object, endpointObjects)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("ep-%d", i), Spec: map[string]any{"hostPort": fmt.Sprintf("h%d:%d", i, 8000+i)}}
	}
	return newWidgets(t, sandbox.Options{}, crd, objs), lossy
}

// upgradeConverter points the CRD at another converter, as a Helm upgrade
// does, and returns once a read at v2 goes through it.
func (s *switched) upgradeConverter(t *testing.T, to *convwebhook.Webhook) {
	s.editCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = to.Conversion() })
	at := s.fx.Dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}).Namespace("default")
	seen := to.Reviews()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := at.Get(ctx, "ep-0", metav1.GetOptions{})
		return err == nil && to.Reviews() > seen, nil
	}); err != nil {
		t.Errorf("the API server never called the new converter: %v", err)
	}
}

// The check after the switch to v2 passes through the correct converter;
// as it ends, a Helm upgrade points the CRD at one that drops spec.port
// on the way to v1. The check was about the CRD before: its verdict does
// not let the switch stand. The check runs again, on the CRD as it is, finds
// every port lost on v1→v2→v1, and switches back.
func TestASwitchIsNotLeftStandingOnTheCheckOfAnotherGeneration(t *testing.T) {
	s, lossy := endpointsThroughCorrectConverter(t)
	if _, err := migration.Promote(t.Context(), s.clients, s.crd, migration.PromoteOptions{Version: "v2"}); err != nil {
		t.Fatalf("bridge: %v", err)
	}
	var upgrade sync.Once
	res, err := migration.Promote(t.Context(), s.clients, s.crd, migration.PromoteOptions{Version: "v2", Progress: func(_ string, done, total int64) {
		if done >= endpointObjects && done == total {
			upgrade.Do(func() { s.upgradeConverter(t, lossy) })
		}
	}})
	if !errors.Is(err, migration.ErrSwitchedBack) {
		t.Fatalf("the switch across a converter upgrade: %v (check %+v), want it checked again and switched back", err, res.Switch)
	}
	now, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil || stages.StorageVersion(now) != "v1" {
		t.Errorf("storage %s after the check (%v), want v1 again", stages.StorageVersion(now), err)
	}
}
