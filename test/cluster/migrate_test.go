package cluster

import (
	"maps"
	"slices"
	"testing"
)

// The plugin's own pass on a real kube-apiserver, namespaces and all:
// every etcd key ends at the storage version and storedVersions is pruned.
func TestMigrateOnKubeAPIServer(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("plain", 50, true, "plain-a", "plain-b")
	if got := e.stored(w); got[w.group+"/v1beta1"] != 100 {
		t.Fatalf("before: etcd holds %v, want 100 at v1beta1", got)
	}
	r := mustCode(t, e.plugin("migrate", w.name(), "--switch-grace=0s"), 0)
	contains(t, "migrate output", r.Stdout, "100")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 100}; !maps.Equal(got, want) {
		t.Errorf("after: etcd holds %v, want %v", got, want)
	}
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
		t.Errorf("storedVersions %v, want [v1]", got)
	}
}
