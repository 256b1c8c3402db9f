package migrate_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// withLateServer adds three API servers to s's etcd, the last of them late
// to see CRD changes, and switches storage to v1 while that one's watch is
// held: three see the switch, the late one still stores at v1beta1. It
// returns clients through a connection-balancing proxy in front of all
// four, whose discovery reads reach only the first server, as the three
// reads of a switch check may all miss the late server, and the release of
// the late server's watch.
func (s *switched) withLateServer(t *testing.T) (migration.Clients, func()) {
	t.Helper()
	cfgs := []*rest.Config{s.sb.RestConfig()}
	for range 2 {
		cfgs = append(cfgs, s.sb.AddAPIServerT(t, sandbox.ServerOptions{}).RestConfig())
	}
	late := s.sb.AddAPIServerT(t, sandbox.ServerOptions{Late: true})
	cfgs = append(cfgs, late.RestConfig())
	t.Cleanup(late.WatchHold.Release)
	old := svHash("example.com", "v1beta1", "Widget")
	for _, cfg := range cfgs {
		waitForHash(t, cfg, old)
	}
	late.WatchHold.Hold()
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", true); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range cfgs[:3] {
		waitForHash(t, cfg, svHash("example.com", "v1", "Widget"))
	}
	if got := hashOf(t, cfgs[3]); got != old {
		t.Fatalf("the late server reports storageVersionHash %q, want v1beta1's %q", got, old)
	}
	return balancedClients(t, cfgs), late.WatchHold.Release
}

// balancedClients are clients through a connection-balancing proxy in
// front of cfgs, whose discovery reads reach only the first server.
func balancedClients(t *testing.T, cfgs []*rest.Config) migration.Clients {
	t.Helper()
	c, err := migration.NewClients(sandbox.BalanceT(t, cfgs...).RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	first, err := migration.NewClients(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	c.Discovery, c.FreshDiscovery = first.Discovery, first.FreshDiscovery
	return c
}

// svHash is the storageVersionHash discovery publishes for a resource
// stored at group/version/kind.
func svHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

func hashOf(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.ServerResourcesForGroupVersion("example.com/v1")
	if err != nil {
		return ""
	}
	for _, r := range list.APIResources {
		if r.Name == "widgets" {
			return r.StorageVersionHash
		}
	}
	return ""
}

func waitForHash(t *testing.T, cfg *rest.Config, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return hashOf(t, cfg) == want, nil
	})
	if err != nil {
		t.Fatalf("%s: storageVersionHash %q, want %q", cfg.Host, hashOf(t, cfg), want)
	}
}

// One API server of four has not seen the switch to v1. A write through it
// stores at v1beta1 again and answers "unchanged": were it counted, the
// prune would leave objects stored at a version storedVersions no longer
// names. migrate writes only through servers that showed it the switch, on
// the connection it writes on: every object ends at v1. Asked again before
// the prune, the late server still stores at v1beta1, where any client's
// write through it would land: nothing is pruned until it has switched,
// and the next run prunes.
func TestMigrateWritesOnlyThroughServersThatSwitched(t *testing.T) {
	const n = 24
	s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), func(*apiextensionsv1.CustomResourceDefinition) {})
	c, release := s.withLateServer(t)
	before := s.contents(t)
	res, err := migration.Migrate(t.Context(), c, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.stored(t); got["example.com/v1"] != n {
		t.Errorf("etcd holds %v after migrate, want all %d at v1 (%d re-stored, %d unchanged)", got, n, res.Rewritten, res.Unchanged)
	}
	if res.Pruned || res.PruneReason != results.PruneServersDisagree || !strings.Contains(res.PruneSkipped, "does not store") {
		t.Errorf("pruned %v (%s: %s) while a server still stores at v1beta1: want no prune", res.Pruned, res.PruneReason, res.PruneSkipped)
	}
	release()
	again, err := migration.Migrate(t.Context(), c, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !again.Pruned {
		t.Errorf("once every server switched, not pruned: %s", again.PruneSkipped)
	}
	if res.Rewritten != n {
		t.Errorf("%d re-stored, %d unchanged: want all %d re-stored", res.Rewritten, res.Unchanged, n)
	}
	if a := res.APIServers; a == nil || a.Switched != 3 || a.NotSwitched != 1 || a.Untold {
		t.Errorf("apiServers %+v, want 3 switched and 1 not", a)
	}
	assertSame(t, before, s.contents(t))
}

// The same with v1 dropping spec.legacy: each object is checked at v1beta1
// before its re-store. A dry run the late server answers goes
// v1beta1→v1beta1 and proves nothing; the write on another server would
// drop the field. The check and the write go to one server that switched:
// the objects holding spec.legacy are found and left as they are.
func TestMigrateChecksOnTheServerItWritesThrough(t *testing.T) {
	const n = 24
	s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), dropLegacyFromV1)
	holding := s.etcdHolding(t, "legacy")
	c, _ := s.withLateServer(t)
	res, err := migration.Migrate(t.Context(), c, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.etcdHolding(t, "legacy"); got != holding {
		t.Errorf("%d of %d objects hold spec.legacy in etcd after migrate: a write the check did not cover dropped it", got, holding)
	}
	if res.Lost != int64(holding) || res.Pruned {
		t.Errorf("lost %d (want %d), pruned %v: want every object holding spec.legacy found, and no prune", res.Lost, holding, res.Pruned)
	}
	// An object done again, after an answer from the late server, is
	// counted once.
	for _, p := range res.Proofs {
		if p.By == results.ProofObjects && p.Objects != n {
			t.Errorf("%s: %s (%d objects), want each of the %d objects counted once", p.Version, p.Detail, p.Objects, n)
		}
	}
}
