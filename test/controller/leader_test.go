package controller_test

import (
	"maps"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// When the leader stops (a rollout, a node drained), it releases the Lease
// and the other replica takes over: the switch that follows is its to
// migrate.
func TestNextLeaderMigrates(t *testing.T) {
	e := newEnv(t)
	w := e.install("failover", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(10, "failover-a"))
	a := e.startReplica("a", "failover-test", options(w))
	b := e.startReplica("b", "failover-test", options(w))
	first, others := waitLeader(t, a, b)
	waitLine(t, first, "decided", w.name())
	first.stop()
	next, _ := waitLeader(t, others...)
	waitLine(t, next, "decided", w.name(), "holds only the storage version v1beta1")

	e.switchStorage(w)
	e.waitStoredVersions(w, "v1")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	waitLine(t, next, "migration ended", w.name(), `"result"="done"`)
	if got := first.log.with("storage version v1beta1 → v1"); len(got) > 0 {
		t.Errorf("the stopped replica saw the switch: %v", got)
	}
}
