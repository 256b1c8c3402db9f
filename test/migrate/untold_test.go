package migrate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// addServers adds three API servers to s's etcd, the last of them late,
// and waits until all four serve v1beta1 storage; the late one's watch is
// released when the test ends. cfgs are the four, the late one last.
func (s *switched) addServers(t *testing.T) (cfgs []*rest.Config, late *sandbox.Server) {
	t.Helper()
	cfgs = []*rest.Config{s.sb.RestConfig()}
	for range 2 {
		cfgs = append(cfgs, s.sb.AddAPIServerT(t, sandbox.ServerOptions{}).RestConfig())
	}
	late = s.sb.AddAPIServerT(t, sandbox.ServerOptions{Late: true})
	cfgs = append(cfgs, late.RestConfig())
	t.Cleanup(late.WatchHold.Release)
	for _, cfg := range cfgs {
		waitForHash(t, cfg, svHash("example.com", "v1beta1", "Widget"))
	}
	return cfgs, late
}

// proxiedClients are clients through a TLS-terminating proxy in front of
// cfgs, discovery included: every answer carries the proxy's certificate,
// whichever server gave it.
func proxiedClients(t *testing.T, cfgs []*rest.Config) migration.Clients {
	t.Helper()
	c, err := migration.NewClients(sandbox.TerminateTLS(t, cfgs...).RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// API servers the plugin cannot tell apart: as in withLateServer, one of
// four has not seen the switch to v1, but an L7 proxy sends each request
// to the next server under one certificate of its own. No answer says
// which server gave it; a check on one server and the write on another
// prove nothing together. One certificate answering both as switched and
// as not shows several servers behind it: while they disagree, migrate
// writes nothing, loses no field and prunes nothing.
func TestMigrateThroughServersItCannotTellApart(t *testing.T) {
	const n = 24
	for _, tc := range []struct {
		name string
		edit func(*apiextensionsv1.CustomResourceDefinition)
	}{
		{"a field v1 drops", dropLegacyFromV1},
		{"same schema", func(*apiextensionsv1.CustomResourceDefinition) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), tc.edit)
			c := s.untoldLateServer(t)
			before, holding := s.contents(t), s.etcdHolding(t, "legacy")
			o := opts()
			o.SwitchTimeout = 3 * time.Second
			var told []string
			o.Notify = func(msg string) { told = append(told, msg) }
			res, err := migration.Migrate(t.Context(), c, s.crd, o)
			if !errors.Is(err, migration.ErrSwitchNotInEffect) {
				t.Fatalf("migrate: %+v, %v: want it to stop before the first write", res, err)
			}
			if !strings.Contains(strings.Join(told, "\n"), "behind one certificate") {
				t.Errorf("told %q: want the servers named before anything is written", told)
			}
			if got := s.stored(t); got["example.com/v1beta1"] != n {
				t.Errorf("etcd %v: want all %d objects left at v1beta1", got, n)
			}
			if got := s.etcdHolding(t, "legacy"); got != holding {
				t.Errorf("%d objects hold spec.legacy in etcd, want %d", got, holding)
			}
			assertSame(t, before, s.contents(t))
		})
	}
	// Once the late server has caught up, every answer agrees: the pass
	// runs, the prune follows, and every key is at v1.
	t.Run("the late server catches up", func(t *testing.T) {
		s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), func(*apiextensionsv1.CustomResourceDefinition) {})
		cfgs, late := s.switchedButLate(t)
		before := s.contents(t)
		o := opts()
		o.Notify = func(msg string) {
			if strings.Contains(msg, "behind one certificate") {
				late.WatchHold.Release()
			}
		}
		res, err := migration.Migrate(t.Context(), proxiedClients(t, cfgs), s.crd, o)
		if err != nil {
			t.Fatal(err)
		}
		if a := res.APIServers; a == nil || !a.SharedCertificate || a.AgreeingRounds < 2 {
			t.Errorf("apiServers %+v: want the shared certificate reported, with its agreeing rounds", a)
		}
		if got := s.stored(t); !res.Pruned || got["example.com/v1"] != n {
			t.Errorf("pruned %v (%s), etcd %v: want every object at v1 and the prune", res.Pruned, res.PruneSkipped, got)
		}
		assertSame(t, before, s.contents(t))
	})
}

// switchedButLate adds the four servers, the late one last, and switches
// storage to v1 while the late one's watch is held.
func (s *switched) switchedButLate(t *testing.T) ([]*rest.Config, *sandbox.Server) {
	t.Helper()
	cfgs, late := s.addServers(t)
	late.WatchHold.Hold()
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", true); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range cfgs[:3] {
		waitForHash(t, cfg, svHash("example.com", "v1", "Widget"))
	}
	return cfgs, late
}

// untoldLateServer is withLateServer behind a TLS-terminating proxy: the
// storage switch to v1 is held from the late server, and the clients
// reach all four servers through the proxy, discovery too.
func (s *switched) untoldLateServer(t *testing.T) migration.Clients {
	t.Helper()
	cfgs, _ := s.switchedButLate(t)
	if got, old := hashOf(t, cfgs[3]), svHash("example.com", "v1beta1", "Widget"); got != old {
		t.Fatalf("the late server reports storageVersionHash %q, want v1beta1's %q", got, old)
	}
	return proxiedClients(t, cfgs)
}
