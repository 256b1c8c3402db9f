package releases

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// answer is what the API server did with the upgrade: the ground truth
// check's exit code is judged against.
type answer struct {
	// refused: the server-side dry-run apply of a new CRD, in its words.
	refused []string
	// broken: a live object a client could not write after the real
	// apply, or whose fields a write lost (see reapply).
	broken []string
	// unjudged: objects only a converter that does not run here could
	// answer for (the new CRD's conversion webhook).
	unjudged []string
	// applied counts the objects every client wrote without loss.
	applied int
	// crds counts, in a variant without objects, the new CRDs the API
	// server took as their users send them; applied is then 0.
	crds int
}

// exit is the exit code a truthful check gives.
func (a answer) exit() int {
	if len(a.refused)+len(a.broken) > 0 {
		return 3
	}
	return 0
}

// String says what the API server did, for the results table.
func (a answer) String() string {
	switch {
	case len(a.refused) > 0 && a.crds+len(a.refused) > len(a.refused):
		return fmt.Sprintf("refused %d of %d CRDs: %s", len(a.refused), a.crds+len(a.refused), first(a.refused))
	case len(a.refused) > 0:
		return "refused the CRDs: " + first(a.refused)
	case a.crds > 0:
		return fmt.Sprintf("applied: %d CRDs, each as its user applies it", a.crds)
	case len(a.broken) > 0:
		return fmt.Sprintf("applied; a client's write failed or lost fields on %d of %d objects: %s", len(a.broken), len(a.broken)+a.applied, first(a.broken))
	}
	s := fmt.Sprintf("applied; %d objects re-applied", a.applied)
	if len(a.unjudged) > 0 {
		s += fmt.Sprintf(", %d not judged (the new conversion webhook does not run here)", len(a.unjudged))
	}
	return s
}

func first(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return fmt.Sprintf("%s (and %d more)", s[0], len(s)-1)
}

// upgrade asks the API server: the new CRDs as a server-side dry-run
// apply, then, if it takes them, for real, then every probe re-applied by
// its client. A probe whose version the new CRDs no longer serve is
// applied by its client at the new storage version, read there: the client
// moved, as the removal tells it to.
func upgrade(ctx context.Context, c fixtures.Clients, next []*apiextensionsv1.CustomResourceDefinition, probes []probe) (answer, error) {
	var a answer
	for _, n := range next {
		if err := applyCRD(ctx, c, n, true); err != nil {
			a.refused = append(a.refused, fmt.Sprintf("%s: %v", n.Name, err))
		}
	}
	if len(a.refused) > 0 {
		return a, nil
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, n := range next {
		if err := applyCRD(ctx, c, n, false); err != nil {
			return a, fmt.Errorf("the apply after a dry run that passed: %s: %w", n.Name, err)
		}
		byName[n.Name] = n
	}
	for _, n := range next {
		if err := waitServed(ctx, c, n); err != nil {
			return a, err
		}
	}
	for _, p := range probes {
		n := byName[p.crd.Name]
		if n == nil {
			continue // a CRD the new release does not apply: unchanged
		}
		err := reapply(ctx, c, p, n)
		switch {
		case err == nil:
			a.applied++
		case stages.ConvertsByWebhook(n) && strings.Contains(err.Error(), "conversion webhook"):
			a.unjudged = append(a.unjudged, fmt.Sprintf("%s: %v", p, err))
		default:
			a.broken = append(a.broken, fmt.Sprintf("%s: %v", p, err))
		}
	}
	return a, nil
}

// reapply is what the probe's clients do after the upgrade: its own
// client applies it again; a controller of the new storage version reads it
// there and writes it back unchanged (what any update at that version
// does: the object is re-stored); then the client reads it where it
// applied it, and must find what it applied.
func reapply(ctx context.Context, c fixtures.Clients, p probe, n *apiextensionsv1.CustomResourceDefinition) error {
	at := stages.StorageVersion(n)
	ri := c.Dynamic.Resource(p.resource(at)).Namespace(p.namespace())
	own := p.body
	if v := stages.SpecVersion(n, p.version); v == nil || !v.Served {
		got, err := ri.Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read at %s: %w", at, err)
		}
		own = map[string]any{"apiVersion": got.GetAPIVersion(), "kind": got.GetKind(), "metadata": p.body["metadata"]}
		if spec, ok := got.Object["spec"]; ok {
			own["spec"] = spec
		}
	}
	if err := applyObject(ctx, c, p, own); err != nil {
		return fmt.Errorf("apply at %s: %w", own["apiVersion"], err)
	}
	got, err := ri.Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read at %s: %w", at, err)
	}
	if _, err := ri.Update(ctx, got, metav1.UpdateOptions{FieldManager: "controller"}); err != nil {
		return fmt.Errorf("unchanged update at %s: %w", at, err)
	}
	gv, _ := schema.ParseGroupVersion(own["apiVersion"].(string))
	back, err := c.Dynamic.Resource(p.resource(gv.Version)).Namespace(p.namespace()).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read at %s: %w", gv.Version, err)
	}
	if lost := missing(own["spec"], back.Object["spec"], "spec"); len(lost) > 0 {
		return fmt.Errorf("applied at %s, read back there without %s", gv.Version, strings.Join(lost, ", "))
	}
	return nil
}

// missing lists the fields of want that got lacks or holds otherwise.
func missing(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		var out []string
		for k, v := range w {
			out = append(out, missing(v, g[k], path+"."+k)...)
		}
		slices.Sort(out)
		return out
	case []any:
		// Item by item: the API server defaults fields inside them.
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var out []string
		for i := range w {
			out = append(out, missing(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case nil:
		return nil
	}
	if !equality.Semantic.DeepEqual(want, got) {
		return []string{path}
	}
	return nil
}
