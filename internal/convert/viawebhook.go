package convert

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
)

// viaWebhook sends the objects to the CRD's converter in batches, and each
// answer back to the version it came from: what that round trip does not
// bring back is lost, as is what the new version's schema drops. An object
// the converter refuses (while it converts others) is refused, with its
// message.
func viaWebhook(ctx context.Context, s *schemas, ps []*pending, opts Options, version string) error {
	batch := opts.Batch
	if batch <= 0 {
		batch = 100
	}
	group := s.crd.Spec.Group
	for start := 0; start < len(ps); start += batch {
		chunk := ps[start:min(start+batch, len(ps))]
		sent := make([]map[string]any, len(chunk))
		for i, p := range chunk {
			sent[i] = withUID(p.obj.Obj, i)
		}
		answers, why, err := reviewEach(ctx, opts.Webhook, s, group+"/"+version, chunk, sent)
		if err != nil {
			return err
		}
		for i, p := range chunk {
			if why[i] != "" {
				p.refused = "the converter will not convert it: " + why[i]
				continue
			}
			converted := restoreMeta(sent[i], answers[i])
			p.want = s.prune(converted, version)
			p.lost = schemacompat.DiffFields("", converted, p.want, nil)
		}
		// Back, by the version each came from, for the round trip.
		byFrom := map[string][]int{}
		for i, p := range chunk {
			if from := versionOf(p.obj.Obj); s.has(from) && p.refused == "" {
				byFrom[from] = append(byFrom[from], i)
			}
		}
		for from, idx := range byFrom {
			there := make([]map[string]any, len(idx))
			back := make([]*pending, len(idx))
			for j, i := range idx {
				there[j] = withUID(chunk[i].want, i)
				back[j] = chunk[i]
			}
			answers, why, err := reviewEach(ctx, opts.Webhook, s, group+"/"+from, back, there)
			if err != nil {
				return err
			}
			for j, p := range back {
				if why[j] != "" {
					p.refused = fmt.Sprintf("the converter will not convert it back to %s, so the round trip cannot be checked: %s", from, why[j])
					continue
				}
				p.lost = append(p.lost, s.changedOnTheWayBack(p.obj.Obj, restoreMeta(p.obj.Obj, answers[j]), from)...)
			}
		}
		for _, p := range chunk {
			if p.refused == "" {
				p.want = restoreMeta(p.obj.Obj, p.want)
			}
		}
	}
	return nil
}

// reviewEach is a review of the objects of ps; where the converter fails
// the whole review, each object is asked alone, so that one it will not
// convert is told apart (why[i], its answer nil) from the rest. A
// converter that fails every object alone is an error naming the first,
// as is a wrong answer.
func reviewEach(ctx context.Context, w Webhook, s *schemas, desired string, ps []*pending, objs []map[string]any) (answers []map[string]any, why []string, err error) {
	answers, err = w.Review(ctx, s.crd, desired, objs)
	why = make([]string, len(objs))
	var failed *FailedError
	if errors.As(err, &failed) && len(objs) > 1 {
		answers = make([]map[string]any, len(objs))
		refused := 0
		for i := range objs {
			one, err := w.Review(ctx, s.crd, desired, objs[i:i+1])
			switch {
			case errors.As(err, &failed):
				why[i] = failed.Message
				refused++
			case err != nil:
				return nil, nil, named(err, ps)
			default:
				answers[i] = one[0]
			}
		}
		if refused < len(objs) {
			return answers, why, nil
		}
		err = &FailedError{CRD: s.crd.Name, Message: why[0]}
	}
	return answers, why, named(err, ps)
}

// named puts the file, line and object into a converter's error: the
// first object sent for a failure, the one it is about for a wrong answer.
func named(err error, ps []*pending) error {
	var answer *AnswerError
	var failed *FailedError
	switch {
	case err == nil || len(ps) == 0:
		return err
	case errors.As(err, &answer):
		for _, p := range ps {
			if objectName(p.obj.Obj) == answer.Object {
				answer.Where = p.obj.Where()
			}
		}
	case errors.As(err, &failed):
		failed.Where, failed.Object = ps[0].obj.Where(), objectName(ps[0].obj.Obj)
	}
	return err
}
