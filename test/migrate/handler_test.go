package migrate_test

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// crdCacheOff is kube-apiserver's --watch-cache-sizes turning the CRDs'
// watch cache off: a GET of a CRD at resourceVersion=0 then reads etcd.
var crdCacheOff = []string{"customresourcedefinitions.apiextensions.k8s.io#0"}

// The CRD read is not the handler. Three API servers behind an L4
// balancer (told apart); a schema hotfix gives v1, the storage version,
// spec.legacy back, and one server's CRD watch is held, so its handler
// still prunes it. With the CRDs' watch cache off, that server's GET of
// the CRD at resourceVersion=0 reads etcd and shows the hotfix's
// generation: were that "switched", its re-stores would drop spec.legacy.
// Only the handler's own answer counts: no object loses the field, every
// key ends at v1 through the two servers that serve the hotfix. The
// control is the same with the cache on, where the read lags with the
// handler.
func TestMigrateAsksTheHandlerNotTheCRDRead(t *testing.T) {
	const n = 24
	for _, tc := range []struct {
		name  string
		sizes []string
	}{
		{"the CRD watch cache off", crdCacheOff},
		{"the CRD watch cache on (control)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newUnswitched(t, sandbox.Options{WatchCacheSizes: tc.sizes}, legacyWidgets(n), dropLegacyFromV1)
			holding := s.etcdHolding(t, "legacy")
			cfgs := s.threeBehindByAHotfix(t)
			readsHotfix := crdGenerationAtZero(t, cfgs[2]) == crdGenerationAtZero(t, cfgs[0])
			if cacheOff := tc.sizes != nil; readsHotfix != cacheOff {
				t.Fatalf("the late server's GET at resourceVersion=0 shows the hotfix: %v, want %v (the CRDs' cache off: %v)", readsHotfix, cacheOff, cacheOff)
			}
			o := opts()
			o.SwitchTimeout = 5 * time.Second
			res, err := migration.Migrate(t.Context(), balancedClients(t, cfgs), s.crd, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("etcd %v; re-stored %d, unchanged %d, lost %d; pruned %v (%s); apiServers %+v",
				s.stored(t), res.Rewritten, res.Unchanged, res.Lost, res.Pruned, res.PruneSkipped, res.APIServers)
			if got := s.etcdHolding(t, "legacy"); got != holding {
				t.Errorf("%d of %d objects hold spec.legacy in etcd after migrate, want %d: the server behind the hotfix re-stored them",
					got, n, holding)
			}
			if got := s.stored(t); !res.Pruned || got["example.com/v1"] != n {
				t.Errorf("pruned %v (%s), etcd %v: want every object re-stored at v1 through the servers that serve the hotfix, and the prune",
					res.Pruned, res.PruneSkipped, got)
			}
			if a := res.APIServers; a == nil || a.Switched != 2 || a.NotSwitched != 1 {
				t.Errorf("apiServers %+v, want 2 switched and 1 not", a)
			}
		})
	}
}

// threeBehindByAHotfix is behindByAHotfix on three servers: storage
// switched to v1 on all three, then the last one's CRD watch held while a
// hotfix gives v1's schema spec.legacy back.
func (s *switched) threeBehindByAHotfix(t *testing.T) []*rest.Config {
	t.Helper()
	cfgs := []*rest.Config{s.sb.RestConfig(), s.sb.AddAPIServerT(t, sandbox.ServerOptions{}).RestConfig()}
	late := s.sb.AddAPIServerT(t, sandbox.ServerOptions{Late: true})
	cfgs = append(cfgs, late.RestConfig())
	t.Cleanup(late.WatchHold.Release)
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
	for _, cfg := range cfgs[:2] {
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
	if kept, err := s.keepsLegacyAtV1(t, cfgs[2]); err != nil || kept {
		t.Fatalf("the late server keeps spec.legacy at v1 (%v, %v): it has seen the hotfix", kept, err)
	}
	return cfgs
}

// crdGenerationAtZero is widgets' CRD generation as the server at cfg
// answers a GET at resourceVersion=0.
func crdGenerationAtZero(t *testing.T, cfg *rest.Config) int64 {
	t.Helper()
	c, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "widgets.example.com", metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	return crd.Generation
}
