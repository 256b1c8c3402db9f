package migrate_test

import (
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// A server that joins mid-pass. A per-request L7 balancer under one
// certificate sends each request to the next of three servers that all
// switched storage to v1: every answer before the pass agrees. At the
// first re-store a fourth server joins the pool, its CRD watch held since
// before the switch: it stores at v1beta1 and answers its share of the
// re-stores "unchanged". Before the prune every server is asked again:
// the late one answers behind the certificate the pass counted, so
// storedVersions keeps v1beta1, and says why. The control: the server
// that joins has switched, and the prune follows.
func TestMigrateAsksEveryServerAgainBeforeThePrune(t *testing.T) {
	const n = 120
	for _, tc := range []struct {
		name string
		late bool
	}{
		{"the server that joins is behind", true},
		{"the server that joins has switched (control)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), func(*apiextensionsv1.CustomResourceDefinition) {})
			cfgs := []*rest.Config{s.sb.RestConfig()}
			for range 2 {
				cfgs = append(cfgs, s.sb.AddAPIServerT(t, sandbox.ServerOptions{}).RestConfig())
			}
			joiner := s.sb.AddAPIServerT(t, sandbox.ServerOptions{Late: tc.late})
			cfgs = append(cfgs, joiner.RestConfig())
			for _, cfg := range cfgs {
				waitForHash(t, cfg, svHash("example.com", "v1beta1", "Widget"))
			}
			if tc.late {
				t.Cleanup(joiner.WatchHold.Release)
				joiner.WatchHold.Hold()
			}
			if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", true); err != nil {
				t.Fatal(err)
			}
			for _, cfg := range cfgs[:3] {
				waitForHash(t, cfg, svHash("example.com", "v1", "Widget"))
			}
			want := map[bool]string{true: svHash("example.com", "v1beta1", "Widget"), false: svHash("example.com", "v1", "Widget")}[tc.late]
			waitForHash(t, cfgs[3], want)

			p := sandbox.TerminateTLS(t, cfgs[:3]...)
			firstRestore := func(r *http.Request) bool {
				return r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/widgets/")
			}
			if err := p.JoinWhen(firstRestore, cfgs[3]); err != nil {
				t.Fatal(err)
			}
			c, err := migration.NewClients(p.RestConfig())
			if err != nil {
				t.Fatal(err)
			}
			before := s.contents(t)
			res, err := migration.Migrate(t.Context(), c, s.crd, opts())
			if err != nil {
				t.Fatal(err)
			}
			stored := s.stored(t)
			t.Logf("etcd %v; re-stored %d, unchanged %d; pruned %v (%s: %s); apiServers %+v; requests %v",
				stored, res.Rewritten, res.Unchanged, res.Pruned, res.PruneReason, res.PruneSkipped, res.APIServers, p.Requests())
			if p.Joined() != 1 {
				t.Fatalf("the fourth server did not join the pool: requests %v", p.Requests())
			}
			if tc.late && stored["example.com/v1beta1"] == 0 {
				t.Fatalf("etcd %v: the late server re-stored nothing at v1beta1, so this run shows nothing", stored)
			}
			// etcd against storedVersions: newUnswitched's cleanup checks every key.
			switch {
			case tc.late && (res.Pruned || res.PruneReason != results.PruneServersDisagree):
				t.Errorf("pruned %v (%s: %s) with %d keys at v1beta1: want no prune, for the server that answered behind",
					res.Pruned, res.PruneReason, res.PruneSkipped, stored["example.com/v1beta1"])
			case !tc.late && (!res.Pruned || stored["example.com/v1"] != n):
				t.Errorf("pruned %v (%s), etcd %v: want every object at v1 and the prune", res.Pruned, res.PruneSkipped, stored)
			}
			assertSame(t, before, s.contents(t))
		})
	}
}
