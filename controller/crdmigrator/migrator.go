package crdmigrator

import (
	"context"
	"errors"
	"slices"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// Migrator is a manager.Runnable that migrates the operator's CRDs. Add it
// to the manager with mgr.Add; it runs on the elected leader only.
type Migrator struct {
	opts    Options
	phases  phases
	clients migrate.Clients
	events  events.EventRecorder
	log     logr.Logger
	// deferred is the reason each CRD was last deferred for, while it
	// stays deferred: a look again every DeferFor that finds the same
	// reason records no Event. Only the one worker loop touches it.
	deferred map[string]string
}

var (
	_ manager.Runnable               = (*Migrator)(nil)
	_ manager.LeaderElectionRunnable = (*Migrator)(nil)
)

// ErrNoCRDs: Options name no CRD and give no selector.
var ErrNoCRDs = errors.New("name the operator's CRDs or give a label selector")

// New builds a Migrator on the manager's config, logger and Event
// recorder. The CRDs are read through an informer of its own, so the
// manager's scheme and cache need not know CustomResourceDefinitions.
func New(mgr manager.Manager, opts Options) (*Migrator, error) {
	if len(opts.CRDs) == 0 && opts.Selector == nil {
		return nil, ErrNoCRDs
	}
	opts = opts.withDefaults()
	clients, err := migrate.NewClients(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	if opts.Migrate.Sightings == nil {
		// The switch grace counts from the first time this process saw a
		// CRD's generation: the informer's sighting, not the later run.
		opts.Migrate.Sightings = migrate.NewSightings("")
	}
	return &Migrator{
		opts:    opts,
		phases:  enabled(opts.Skip),
		clients: clients,
		events:  mgr.GetEventRecorder(opts.Name),
		log:     mgr.GetLogger().WithName(opts.Name),
	}, nil
}

// NeedLeaderElection is true: two replicas re-storing the same objects
// would each prove nothing about the other's writes, and the prune must
// follow one complete pass.
func (m *Migrator) NeedLeaderElection() bool { return true }

// Start watches the operator's CRDs and migrates each one when it is first
// seen and whenever it changes, one CRD at a time, until ctx ends (the
// manager stops, or this replica loses the lease).
func (m *Migrator) Start(ctx context.Context) error {
	// Named, so that a metrics provider (controller-runtime's registers
	// one) exports its depth, latency and retries.
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](m.opts.MinBackoff, m.opts.MaxBackoff),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "crdversion-migrator"})
	defer queue.ShutDown()
	factory := apiextensionsinformers.NewSharedInformerFactoryWithOptions(m.clients.CRDs(), 0,
		apiextensionsinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			// Named CRDs may carry no label: then every CRD is listed and
			// those named are picked here.
			if len(m.opts.CRDs) == 0 {
				o.LabelSelector = m.opts.Selector.String()
			}
		}))
	defer factory.Shutdown()
	informer := factory.Apiextensions().V1().CustomResourceDefinitions().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			why := "created"
			if initial {
				why = "seen at start"
			}
			m.enqueue(queue, crd, why)
		},
		UpdateFunc: func(old, cur any) {
			if ok, why := changed(old.(*apiextensionsv1.CustomResourceDefinition), cur.(*apiextensionsv1.CustomResourceDefinition)); ok {
				m.enqueue(queue, cur.(*apiextensionsv1.CustomResourceDefinition), why)
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	m.log.Info("watching the operator's CRDs", "crds", m.opts.CRDs, "selector", m.opts.Selector.String(), "phases", m.phases)
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for m.next(ctx, queue, informer.GetIndexer()) {
	}
	return nil
}

func (m *Migrator) ours(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return slices.Contains(m.opts.CRDs, crd.Name) || m.opts.Selector.Matches(labels.Set(crd.Labels))
}

func (m *Migrator) enqueue(q workqueue.TypedRateLimitingInterface[string], crd *apiextensionsv1.CustomResourceDefinition, why string) {
	if !m.ours(crd) {
		return
	}
	m.opts.Migrate.Sightings.Saw(crd)
	m.log.V(1).Info("queued", "crd", crd.Name, "generation", crd.Generation, "because", why)
	q.Add(crd.Name)
}

// next migrates the next CRD queued; false once the queue is shut down.
func (m *Migrator) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], store cache.Indexer) bool {
	name, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(name)
	obj, exists, err := store.GetByKey(name)
	if err != nil || !exists {
		// Deleted meanwhile: nothing of it is left to migrate.
		q.Forget(name)
		return true
	}
	switch m.reconcile(ctx, obj.(*apiextensionsv1.CustomResourceDefinition)) {
	case retry:
		q.AddRateLimited(name)
	case lookAgain:
		q.Forget(name)
		q.AddAfter(name, m.opts.DeferFor)
	case settled:
		q.Forget(name)
	}
	return true
}
