package migrate_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// An operator that owns a CRD re-stores its objects at start-up, after its
// new release switched the storage version, with the package's defaults.
func Example() {
	cfg, stop := widgetsCluster(200)
	defer stop()

	clients, err := migrate.NewClients(cfg)
	if err != nil {
		panic(err)
	}
	// The zero migrate.Options re-store every object and prune
	// storedVersions too, once a write begun before the switch can no
	// longer land (SwitchGrace, two minutes by default): here they are
	// kept, and the example ends with the pass.
	res, err := migrate.Migrate(context.Background(), clients, "widgets.example.com", migrate.Options{KeepStoredVersions: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Rewritten, "re-stored at", res.Storage, "proof:", res.Proofs[0].By, "prune:", res.PruneReason)
	// Output: 200 re-stored at v1 proof: schema prune: Disabled
}

// An operator's pod gets 30 s to stop: cancelling the migration ends the
// pass where it is, with nothing half-done and the reason given (how soon
// is the bench's to measure).
func TestCancelStopsThePass(t *testing.T) {
	cfg, stop := widgetsCluster(3000)
	defer stop()
	clients, err := migrate.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	opts := migrate.Options{}
	opts.Restore.Progress = func(done, total int64) {
		if done == 100 {
			cancel()
		}
	}
	res, err := migrate.Migrate(ctx, clients, "widgets.example.com", opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != results.StopInterrupted || res.Failed != 0 || res.Pruned {
		t.Fatalf("cancelled run: %+v", res)
	}
	if res.Rewritten >= 3000 {
		t.Errorf("the pass went on to the end after it was cancelled: %d re-stored", res.Rewritten)
	}
}

// widgetsCluster starts an API server with widgets.example.com: n objects written
// at v1beta1, then the storage version switched to v1.
func widgetsCluster(n int) (*rest.Config, func()) {
	sb, err := sandbox.Start(context.Background(), sandbox.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fail := func(err error) {
		_ = sb.Stop()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The config as an operator's rest.InClusterConfig gives it: no rate
	// limit set, which migrate.NewClients must not read as client-go's 5/s.
	cfg := sb.RestConfig()
	fx, err := fixtures.NewClients(cfg)
	if err != nil {
		fail(err)
	}
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true}, fixtures.Version{Name: "v1", Served: true})
	if _, err := fx.CreateCRD(context.Background(), crd); err != nil {
		fail(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("w-%05d", i), Spec: map[string]any{"size": int64(i)}}
	}
	if err := fx.CreateObjects(context.Background(), schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}, "Widget", objs); err != nil {
		fail(err)
	}
	if err := fx.SwitchStorage(context.Background(), crd.Name, "v1", true); err != nil {
		fail(err)
	}
	return cfg, func() { _ = sb.Stop() }
}
