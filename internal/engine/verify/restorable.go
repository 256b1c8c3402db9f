package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ProveOptions tune ProveRestorable.
type ProveOptions struct {
	// Versions limits the proof to these old versions (empty: all of storedVersions).
	Versions    []string
	Concurrency int
	Gentle      bool
	PageSize    int64
	Progress    func(done, total int64)
	// Record records a passed check on the CRD.
	Record bool
}

// ProveRestorable shows, per old stored version, whether its objects survive a re-store:
// by the CRD (ProofByCRD) or a check of every object, which needs the storage switch in
// effect so a dry-run update at the old version is exactly old→new→old. A recorded pass
// marks the stage for status and promote, never the proof before a re-store.
func ProveRestorable(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, opts ProveOptions) ([]results.Proof, error) {
	storage := stages.StorageVersion(crd)
	proofs := []results.Proof{}
	for _, v := range crd.Status.StoredVersions {
		if v == storage || (len(opts.Versions) > 0 && !slices.Contains(opts.Versions, v)) {
			continue
		}
		p, known := ProofByCRD(crd, v, false)
		if !known {
			// Checked at v itself, a converter's refusal at v shows it is not stored there.
			vo := Options{Versions: p.CheckedAt, Concurrency: opts.Concurrency, Gentle: opts.Gentle, PageSize: opts.PageSize,
				RefusedNotStored: slices.Equal(p.CheckedAt, []string{v})}
			if opts.Progress != nil {
				vo.Progress = func(_ string, done, total int64) { opts.Progress(done, total) }
			}
			vr, err := Verify(ctx, c, crd, vo)
			if err != nil {
				return nil, fmt.Errorf("checking %s on the objects of %s: %w", Trip(v, storage), crd.Name, err)
			}
			p.By, p.Objects, p.Skipped, p.NotStored, p.Losses = results.ProofObjects, vr.Objects, vr.Skipped, vr.NotStored, vr.Losses
			p.Detail = fmt.Sprintf("%s checked on %s through the API server", CheckedTrip(p), stages.Objects(vr.Objects))
			if vr.NotStored > 0 {
				p.Detail += fmt.Sprintf("; the converter will not express %s at %s, so none of them is stored there (a read at an object's stored version converts nothing)", stages.Objects(vr.NotStored), v)
			}
			if len(vr.Losses) > 0 {
				p.Detail = fmt.Sprintf("%s loses data on %d of %s: re-storing them at %s would make it permanent", CheckedTrip(p), len(vr.Losses), stages.Objects(vr.Objects+vr.Skipped), storage)
			} else if opts.Record {
				if err := RecordVerification(ctx, c.CRDs, crd, v, lifecycle.Verification{From: storage, Objects: vr.Objects}); apierrors.IsForbidden(err) {
					p.Detail += "; not recorded on the CRD (you may not patch it)"
				} else if err != nil {
					return nil, err
				}
			}
		}
		proofs = append(proofs, p)
	}
	return proofs, nil
}

// Trip names the round trip old→storage→old.
func Trip(old, storage string) string { return old + "→" + storage + "→" + old }

// CheckedTrip names the round trip a check of pr's objects made (at served versions if not pr's).
func CheckedTrip(pr results.Proof) string {
	if len(pr.CheckedAt) == 0 || slices.Equal(pr.CheckedAt, []string{pr.Version}) {
		return Trip(pr.Version, pr.Storage)
	}
	return fmt.Sprintf("%s is not served: what its objects show at %s, through %s and back,", pr.Version, strings.Join(pr.CheckedAt, ", "), pr.Storage)
}

// ProofByCRD says what the CRD alone shows of re-storing the objects that may be stored
// at old version v; false when each object must be checked.
func ProofByCRD(crd *apiextensionsv1.CustomResourceDefinition, v string, acceptLoss bool) (results.Proof, bool) {
	storage := stages.StorageVersion(crd)
	p := results.Proof{Version: v, Storage: storage}
	ok, why := schemacompat.SchemaProof(crd, v, storage)
	switch {
	case !inSpec(crd, v):
		p.By = results.ProofUnreadable
		p.Detail = fmt.Sprintf("%s is missing from spec.versions: the API server cannot convert an object stored at it, so no object stored at it can be re-stored, and none can lose data to a re-store: such an object fails the re-store and blocks the prune", v)
	case ok:
		p.By, p.Detail = results.ProofSchema, Trip(v, storage)+" proven by the schemas: "+why
	case acceptLoss:
		p.By, p.Detail = results.ProofWaived, "not checked: loss accepted"
	case len(checkVersions(crd, v)) == 0:
		p.By = results.ProofUnserved
		p.Detail = fmt.Sprintf("%s is not served, and no version but %s is: what only %s's schema holds (%s) no client can read; "+
			"a migration with objects serves %s again, deprecated, while it checks each of them at it, and stops serving it after", v, storage, v, why, v)
	default:
		p.CheckedAt = checkVersions(crd, v)
		return p, false
	}
	return p, true
}

// checkVersions are where old version v's objects are checked: v if served, else every
// served version but storage: an object's data reaches each by conversion, so a field
// storage drops and one of them shows is a loss, read there.
func checkVersions(crd *apiextensionsv1.CustomResourceDefinition, v string) []string {
	if served(crd, v) {
		return []string{v}
	}
	storage := stages.StorageVersion(crd)
	var at []string
	for _, ver := range crd.Spec.Versions {
		if ver.Served && ver.Name != storage {
			at = append(at, ver.Name)
		}
	}
	stages.SortByPriority(at)
	return at
}

func inSpec(crd *apiextensionsv1.CustomResourceDefinition, v string) bool {
	for _, ver := range crd.Spec.Versions {
		if ver.Name == v {
			return true
		}
	}
	return false
}
