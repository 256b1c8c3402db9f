package migrate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// A server one CRD generation behind: all four servers switched storage to
// v1 (generation 2, v1 without spec.legacy), then a hotfix gave v1's
// schema spec.legacy back (generation 3), and one server has not seen it.
// It reports v1's storageVersionHash like the others, so nothing in
// discovery sets it apart; its re-store at v1 prunes spec.legacy from
// every object it writes. Whether the servers can be told apart (an L4
// balancer) or not (a TLS-terminating proxy), no object may lose the
// field, and no key may be left at a version storedVersions lacks.
func TestMigrateWithAServerOneGenerationBehind(t *testing.T) {
	const n = 24
	for _, tc := range []struct {
		name    string
		clients func(*testing.T, []*rest.Config) migration.Clients
		// told: the servers can be told apart, and the pass goes through
		// the three that serve the hotfix; else nothing is written.
		told bool
	}{
		{"an L4 balancer", balancedClients, true},
		{"a TLS-terminating proxy", proxiedClients, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), dropLegacyFromV1)
			holding := s.etcdHolding(t, "legacy")
			cfgs := s.behindByAHotfix(t)
			o := opts()
			o.SwitchTimeout = 3 * time.Second
			res, err := migration.Migrate(t.Context(), tc.clients(t, cfgs), s.crd, o)
			switch {
			case tc.told && err != nil:
				t.Fatal(err)
			case !tc.told && !errors.Is(err, migration.ErrSwitchNotInEffect):
				t.Fatalf("%+v, %v: want no write while the servers behind one certificate disagree", res, err)
			case !tc.told:
				res = &results.Result{}
			}
			t.Logf("etcd %v; re-stored %d, unchanged %d, lost %d; pruned %v (%s: %s); apiServers %+v",
				s.stored(t), res.Rewritten, res.Unchanged, res.Lost, res.Pruned, res.PruneReason, res.PruneSkipped, res.APIServers)
			if got := s.etcdHolding(t, "legacy"); got != holding {
				t.Errorf("%d of %d objects hold spec.legacy in etcd after migrate, want %d: a server behind by the hotfix pruned it",
					got, n, holding)
			}
			bad, err := s.sb.CheckStoredVersions(t.Context(), s.crd, "example.com", "widgets")
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bad {
				t.Errorf("etcd after migrate: %s", b)
			}
			if tc.told && (!res.Pruned || res.Rewritten != n) {
				t.Errorf("re-stored %d, pruned %v (%s): want every object re-stored through the servers that serve the hotfix", res.Rewritten, res.Pruned, res.PruneSkipped)
			}
		})
	}
}

// behindByAHotfix adds three servers to s, switches storage to v1 and
// waits until all four serve it, then holds the last one's CRD watch and
// gives v1's schema spec.legacy back: three servers keep the field at v1,
// the late one still drops it. It returns the four servers' configs, the
// late one last.
func (s *switched) behindByAHotfix(t *testing.T) []*rest.Config {
	t.Helper()
	cfgs, late := s.addServers(t)
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", true); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range cfgs {
		waitForHash(t, cfg, svHash("example.com", "v1", "Widget"))
	}
	late.WatchHold.Hold()
	s.editCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == "v1" {
				crd.Spec.Versions[i].Schema = specSchema("hostPort", "legacy")
			}
		}
	})
	for _, cfg := range cfgs[:3] {
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			kept, err := s.keepsLegacyAtV1(t, cfg)
			return err == nil && kept, nil
		})
		if err != nil {
			t.Fatalf("%s: v1 still drops spec.legacy after the hotfix: %v", cfg.Host, err)
		}
	}
	if late.WatchHold.Queued() == 0 {
		t.Fatal("the late server's watch holds nothing: it may have seen the hotfix")
	}
	if kept, err := s.keepsLegacyAtV1(t, cfgs[3]); err != nil || kept {
		t.Fatalf("the late server keeps spec.legacy at v1 (%v, %v): it has seen the hotfix", kept, err)
	}
	return cfgs
}

// keepsLegacyAtV1 reports whether the server at cfg keeps spec.legacy in
// an object created at v1 (a dry run): whether it serves the hotfix.
func (s *switched) keepsLegacyAtV1(t *testing.T, cfg *rest.Config) (bool, error) {
	t.Helper()
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "probe", "namespace": "ns-0"}, "spec": map[string]any{"hostPort": "h:0", "legacy": "x"}}}
	got, err := d.Resource(s.gvr).Namespace("ns-0").Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, err
	}
	_, kept, _ := unstructured.NestedString(got.Object, "spec", "legacy")
	return kept, nil
}
