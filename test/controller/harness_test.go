package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubectl-crdversion/kubectl-crdversion/controller/crdmigrator"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// within bounds every wait of these tests: a migration of a few dozen
// objects takes well under a second; two minutes is for a slow, shared
// machine.
const within = 2 * time.Minute

// env is a test's view of the cluster as its administrator.
type env struct {
	t       *testing.T
	c       *fullsandbox.Cluster
	kube    kubernetes.Interface
	clients fixtures.Clients
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cfg, err := shared.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := fixtures.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, c: shared, kube: kube, clients: clients}
}

// widgets is a test's own CRD: group <name>.test, v1beta1 the storage
// version and v1 served, objects created at v1beta1.
type widgets struct {
	group string
}

func (w widgets) name() string { return "widgets." + w.group }

func (w widgets) gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: w.group, Version: version, Resource: "widgets"}
}

// install creates the CRD, edited by edit, and the objects, in their
// namespaces.
func (e *env) install(name string, edit func(*apiextensionsv1.CustomResourceDefinition), objs []fixtures.Object) widgets {
	e.t.Helper()
	w := widgets{group: name + ".test"}
	crd := fixtures.CRD(w.group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	edit(crd)
	if _, err := e.clients.CreateCRD(e.t.Context(), crd); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), w.name(), metav1.DeleteOptions{})
	})
	if err := e.clients.CreateObjects(e.t.Context(), w.gvr("v1beta1"), "Widget", objs); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// objects are perNS widgets in each namespace.
func objects(perNS int, namespaces ...string) []fixtures.Object {
	var objs []fixtures.Object
	for _, ns := range namespaces {
		for i := range perNS {
			objs = append(objs, fixtures.Object{Namespace: ns, Name: fmt.Sprintf("w-%04d", i), Spec: map[string]any{"size": int64(i)}})
		}
	}
	return objs
}

func (e *env) switchStorage(w widgets) {
	e.t.Helper()
	if err := e.clients.SwitchStorage(e.t.Context(), w.name(), "v1", false); err != nil {
		e.t.Fatal(err)
	}
}

// stored counts the CRD's etcd keys by the apiVersion they are stored at.
func (e *env) stored(w widgets) map[string]int {
	e.t.Helper()
	got, err := e.c.StoredAPIVersions(e.t.Context(), w.group, "widgets")
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) crd(w widgets) *apiextensionsv1.CustomResourceDefinition {
	e.t.Helper()
	crd, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(e.t.Context(), w.name(), metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return crd
}

// waitStoredVersions polls the CRD until storedVersions is want.
func (e *env) waitStoredVersions(w widgets, want ...string) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.t.Context(), 200*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		crd, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, w.name(), metav1.GetOptions{})
		return err == nil && slices.Equal(crd.Status.StoredVersions, want), nil
	})
	if err != nil {
		e.t.Fatalf("%s: storedVersions %v, not %v within %s", w.name(), e.crd(w).Status.StoredVersions, want, within)
	}
}

// events are the Events recorded on the CRD (cluster-scoped: in default).
func (e *env) events(w widgets) []eventsv1.Event {
	e.t.Helper()
	list, err := e.kube.EventsV1().Events(metav1.NamespaceDefault).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(ev eventsv1.Event) bool {
		return ev.Regarding.Kind != "CustomResourceDefinition" || ev.Regarding.Name != w.name()
	})
}

// waitEvent polls until the CRD has an Event with the reason, and
// returns it.
func (e *env) waitEvent(w widgets, reason string) eventsv1.Event {
	e.t.Helper()
	var got eventsv1.Event
	err := wait.PollUntilContextTimeout(e.t.Context(), 200*time.Millisecond, within, true, func(context.Context) (bool, error) {
		i := slices.IndexFunc(e.events(w), func(ev eventsv1.Event) bool { return ev.Reason == reason })
		if i >= 0 {
			got = e.events(w)[i]
		}
		return i >= 0, nil
	})
	if err != nil {
		e.t.Fatalf("%s: no %s Event within %s; Events: %v", w.name(), reason, within, reasons(e.events(w)))
	}
	return got
}

func reasons(evs []eventsv1.Event) []string {
	var r []string
	for _, ev := range evs {
		r = append(r, ev.Reason+": "+ev.Note)
	}
	return r
}

// metric is the value of a metric of the Migrator for the CRD, read from
// controller-runtime's registry as its metrics endpoint serves it (0 when
// the CRD has none).
func metric(t *testing.T, name string, w widgets) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "crd" && l.GetValue() == w.name() {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// replica is one process of the operator: a manager with the Migrator,
// its log kept.
type replica struct {
	name string
	mgr  manager.Manager
	log  *lines
	// stop stops the manager, releasing its lease, and waits for it.
	stop func()
}

// startReplica starts a manager that elects its leader on lease, with a
// Migrator given opts, until the test ends.
func (e *env) startReplica(name, lease string, opts crdmigrator.Options) *replica {
	e.t.Helper()
	cfg, err := e.c.RestConfig()
	if err != nil {
		e.t.Fatal(err)
	}
	return e.startReplicaAs(cfg, name, lease, opts)
}

// startReplicaAs is startReplica with the identity cfg holds. The replica
// stops when the test ends or stop is called.
func (e *env) startReplicaAs(cfg *rest.Config, name, lease string, opts crdmigrator.Options) *replica {
	e.t.Helper()
	var err error
	r := &replica{name: name, log: &lines{}}
	renew, leaseFor, retry := 3*time.Second, 4*time.Second, 500*time.Millisecond
	r.mgr, err = manager.New(cfg, manager.Options{
		Logger:                        r.log.logger(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              lease,
		LeaderElectionNamespace:       metav1.NamespaceDefault,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseFor,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := crdmigrator.New(r.mgr, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := r.mgr.Add(m); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.mgr.Start(ctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("replica %s: %v", name, err)
			}
		})
	}
	e.t.Cleanup(r.stop)
	return r
}

func (r *replica) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// waitLeader waits until one of the replicas leads, and returns it and
// the others.
func waitLeader(t *testing.T, rs ...*replica) (*replica, []*replica) {
	t.Helper()
	var leader *replica
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, within, true, func(context.Context) (bool, error) {
		for _, r := range rs {
			if r.elected() {
				leader = r
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no replica elected within %s", within)
	}
	return leader, slices.DeleteFunc(slices.Clone(rs), func(r *replica) bool { return r == leader })
}

// lines is a replica's log, one line an entry.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.l = append(l.l, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

// with are the lines holding every word.
func (l *lines) with(words ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(l.l), func(s string) bool {
		for _, w := range words {
			if !strings.Contains(s, w) {
				return true
			}
		}
		return false
	})
}
