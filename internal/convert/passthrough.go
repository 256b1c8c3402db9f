package convert

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// refusedAsIs is what the API server would refuse an object left at its
// version for, under the CRDs given: a version they do not serve, a field
// the version's schema does not declare (kubectl apply validates strictly,
// and server-side apply refuses it too), or its validation. Passing an
// object through unchecked would hide that the release cannot take it.
func (s *schemas) refusedAsIs(ctx context.Context, obj map[string]any, version string) ([]string, error) {
	if !serves(s.crd, version) {
		return []string{fmt.Sprintf("%s does not serve %s", s.crd.Name, version)}, nil
	}
	var out []string
	for _, d := range schemacompat.DiffFields("", obj, s.prune(obj, version), nil) {
		out = append(out, d.Path+": field not declared in schema")
	}
	errs, err := s.rejected(ctx, obj, version)
	return append(out, errs...), err
}

// checkAsIs validates every custom resource left at its version (at the
// target already, or its CRD lacking it) as the API server would take it
// there: one it would refuse is rejected.
func checkAsIs(ctx context.Context, crs []*candidate, res *results.ConvertResult, byName map[string]*apiextensionsv1.CustomResourceDefinition) error {
	cache := map[string]*schemas{}
	for _, c := range crs {
		row := &res.Objects[c.index]
		switch row.Outcome {
		case results.AtVersion, results.NoSuchVersion, results.NotServed:
		default:
			continue
		}
		s, ok := cache[row.CRD]
		if !ok {
			var err error
			if s, err = newSchemas(byName[row.CRD]); err != nil {
				return err
			}
			cache[row.CRD] = s
		}
		errs, err := s.refusedAsIs(ctx, c.obj.Obj, row.From)
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			// Rejected where it stays: at its own version.
			row.Outcome, row.Reason, row.Errors, row.To = results.Rejected, aggregate(errs), errs, row.From
		}
	}
	return nil
}

// seenObject is an object of the input in its order: a custom resource
// of the CRDs given (row in res.Objects), or one of a kind they lack in a
// group they define.
type seenObject struct {
	row        int
	apiVersion string
	// asIs: checked as it is, not converted.
	asIs  bool
	noCRD *results.NotConverted
}

// notConverted lists, in the input's order, every object left as it was,
// with why.
func notConverted(res *results.ConvertResult, seen []seenObject) []results.NotConverted {
	out := []results.NotConverted{}
	for _, s := range seen {
		if s.noCRD != nil {
			out = append(out, *s.noCRD)
			continue
		}
		o := res.Objects[s.row]
		n := results.NotConverted{Where: o.Where, File: o.File, APIVersion: s.apiVersion, Kind: o.Kind,
			Namespace: o.Namespace, Name: o.Name, CRD: o.CRD, Errors: o.Errors, Lost: o.Lost}
		switch {
		case o.Outcome == results.Converted:
			continue
		case o.Outcome == results.Rejected && s.asIs:
			n.Reason, n.Message = results.RejectedBySchema, fmt.Sprintf("%s refuses it as it is, at %s", o.CRD, o.From)
		case o.Outcome == results.Rejected:
			n.Reason, n.Message = results.RejectedBySchema, fmt.Sprintf("%s's schema at %s would refuse it converted", o.CRD, o.To)
		case o.Outcome == results.Refused && o.Reason != "":
			n.Reason, n.Message = results.RefusedByConverter, o.Reason
		case o.Outcome == results.Refused:
			n.Reason, n.Message = results.Lossy, fmt.Sprintf("converting it to %s would lose %d field(s)", o.To, len(o.Lost))
		case o.Outcome == results.AtVersion:
			n.Reason, n.Message = results.AtTarget, "at "+o.To+" already"
		case o.Outcome == results.NoSuchVersion:
			n.Reason, n.Message = results.TargetMissing, o.CRD+" has no version "+o.To
		case o.Outcome == results.NotServed:
			n.Reason, n.Message = results.TargetNotServed, o.CRD+" does not serve "+o.To
		}
		out = append(out, n)
	}
	return out
}

// noCRD is an object of a kind the CRDs given lack, in a group they
// define: the release drops its CRD.
func noCRD(obj *manifest.Object, apiVersion, kind, group string) *results.NotConverted {
	return &results.NotConverted{Where: obj.Where(), File: obj.File.Path, APIVersion: apiVersion, Kind: kind,
		Namespace: meta(obj.Obj, "namespace"), Name: meta(obj.Obj, "name"), Reason: results.NoCRD,
		Message: fmt.Sprintf("no CRD of kind %s in the CRDs given, while they define others of %s: the API server would not take it", kind, group)}
}
