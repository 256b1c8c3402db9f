package migration

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// CRDChanged is why a pass stopped writing: the CRD moved to another
// generation (a GitOps sync, a Helm upgrade, another user's step) while it
// wrote, and every proof of the pass is about the generation it began with.
type CRDChanged struct {
	Name     string
	From, To int64
	// What says what moved, in words ("storage version v1 → v1beta1").
	What string
}

func (c CRDChanged) Error() string {
	if c.To == 0 {
		return fmt.Sprintf("%s was deleted while objects were re-stored: writing stopped", c.Name)
	}
	return fmt.Sprintf("%s changed while objects were re-stored (generation %d → %d: %s): writing stopped, as what was proven holds for the CRD it was proven on",
		c.Name, c.From, c.To, c.What)
}

// pruneSkipped says why the prune was not made, in the prune guard's words.
func (c CRDChanged) pruneSkipped() string {
	if c.To == 0 {
		return "the CRD was deleted during the migration"
	}
	return fmt.Sprintf("the CRD was changed during the migration (generation %d → %d: %s)", c.From, c.To, c.What)
}

// crdPoll is how often the CRD is read where it cannot be watched.
const crdPoll = 500 * time.Millisecond

// watchGeneration returns a context ended, with a CRDChanged cause, once crd's
// generation moves or it is deleted; it watches from resourceVersion from, so
// no change is missed, and polls every crdPoll where the watch fails.
func watchGeneration(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition, from string, log logr.Logger) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancelCause(ctx)
	// Writes stop before the line is logged: a reader may count on it.
	g := generationWatch{crd: crd, cancel: func(c CRDChanged) {
		cancel(c)
		log.Info("CRD changed: no further write", "from", c.From, "to", c.To, "what", c.What)
	}}
	go g.run(wctx, client, from)
	return wctx, func() { cancel(nil) }
}

type generationWatch struct {
	crd    *apiextensionsv1.CustomResourceDefinition
	cancel func(CRDChanged)
}

// moved ends the watch's context where now is another generation or CRD.
func (g generationWatch) moved(now *apiextensionsv1.CustomResourceDefinition) bool {
	if now.Generation == g.crd.Generation && now.UID == g.crd.UID {
		return false
	}
	g.cancel(changeOf(g.crd, now))
	return true
}

func (g generationWatch) deleted() {
	g.cancel(CRDChanged{Name: g.crd.Name, From: g.crd.Generation, What: "deleted"})
}

func (g generationWatch) run(ctx context.Context, client apiextensionsclient.Interface, rv string) {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	for ctx.Err() == nil {
		if rv != "" {
			w, err := crds.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", g.crd.Name).String(), ResourceVersion: rv})
			if err == nil {
				var done bool
				rv, done = g.follow(w, rv)
				w.Stop()
				if done {
					return
				}
				continue // ended as watches do: on from where it was, or read anew
			}
		}
		// Read it anew: a watch from no resourceVersion could miss a change.
		select {
		case <-ctx.Done():
			return
		case <-time.After(crdPoll):
		}
		now, err := crds.Get(ctx, g.crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			g.deleted()
			return
		case err != nil:
			rv = ""
		case g.moved(now):
			return
		default:
			rv = now.ResourceVersion
		}
	}
}

// follow reads w's events until it ends: done once the CRD moved, else the
// resourceVersion to watch on from ("" where the watch failed).
func (g generationWatch) follow(w watch.Interface, rv string) (string, bool) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return "", false
		case watch.Deleted:
			g.deleted()
			return rv, true
		}
		now, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			continue
		}
		if g.moved(now) {
			return rv, true
		}
		rv = now.ResourceVersion
	}
	return rv, false
}

func changeOf(was, now *apiextensionsv1.CustomResourceDefinition) CRDChanged {
	c := CRDChanged{Name: was.Name, From: was.Generation, To: now.Generation}
	var what []string
	if a, b := stages.StorageVersion(was), stages.StorageVersion(now); a != b {
		what = append(what, fmt.Sprintf("storage version %s → %s", a, b))
	}
	old := map[string]apiextensionsv1.CustomResourceDefinitionVersion{}
	for _, v := range was.Spec.Versions {
		old[v.Name] = v
	}
	for _, v := range now.Spec.Versions {
		o, ok := old[v.Name]
		delete(old, v.Name)
		switch {
		case !ok:
			what = append(what, v.Name+" added")
		case o.Served != v.Served && v.Served:
			what = append(what, v.Name+" served again")
		case o.Served != v.Served:
			what = append(what, v.Name+" no longer served")
		}
		if ok && !reflect.DeepEqual(o.Schema, v.Schema) {
			what = append(what, "the schema of "+v.Name)
		}
	}
	for _, v := range was.Spec.Versions {
		if _, gone := old[v.Name]; gone {
			what = append(what, v.Name+" removed")
		}
	}
	if !reflect.DeepEqual(was.Spec.Conversion, now.Spec.Conversion) {
		what = append(what, "the conversion")
	}
	if now.UID != was.UID {
		what = append(what, "deleted and created anew")
	}
	if len(what) == 0 {
		what = append(what, "another field of its spec")
	}
	c.What = strings.Join(what, ", ")
	return c
}
