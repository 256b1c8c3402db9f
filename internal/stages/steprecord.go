package stages

import (
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// StepsAnnotation holds, on the CRD or its manifest, what each step of the pairs in flight changed,
// oldest first: unlike a rule, it tells a version the step deprecated or unserved from one already so.
const StepsAnnotation = "crdversion.kubectl.io/steps"

// maxRecordedSteps bounds one pair's records: a pair has four steps forward.
const maxRecordedSteps = 8

// Steps reads the CRD's step records; one that does not parse is none (rollback then uses rules).
func Steps(crd *apiextensionsv1.CustomResourceDefinition) []StepRecord {
	raw, ok := crd.Annotations[StepsAnnotation]
	if !ok {
		return nil
	}
	var steps []StepRecord
	if json.Unmarshal([]byte(raw), &steps) != nil {
		return nil
	}
	return steps
}

// StepsWellFormed says whether the CRD's step record, if any, is one this plugin writes; one that
// is not can only be a person's, and is not written over.
func StepsWellFormed(crd *apiextensionsv1.CustomResourceDefinition) bool {
	raw, ok := crd.Annotations[StepsAnnotation]
	if !ok {
		return true
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var steps []StepRecord
	if dec.Decode(&steps) != nil || len(steps) == 0 {
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		return false
	}
	for _, s := range steps {
		if s.Version == "" || s.To == "" || len(s.Changes) == 0 {
			return false
		}
	}
	return true
}

// EncodeSteps renders steps as the annotation's value ("" for none).
func EncodeSteps(steps []StepRecord) string {
	if len(steps) == 0 {
		return ""
	}
	b, _ := json.Marshal(steps)
	return string(b)
}

// PushStep adds a step's record to its pair's. Another pair's records stay, whatever the order
// of their steps: two pairs may be in flight (v2 introduced while v1beta1 is served again).
// Past maxRecordedSteps, the pair's own oldest record goes, never another's.
func PushStep(steps []StepRecord, rec StepRecord) []StepRecord {
	steps = append(slices.Clone(steps), rec)
	mine := 0
	for _, s := range steps {
		if s.Version == rec.Version {
			mine++
		}
	}
	for i := 0; mine > maxRecordedSteps && i < len(steps); {
		if steps[i].Version != rec.Version {
			i++
			continue
		}
		steps = slices.Delete(steps, i, i+1)
		mine--
	}
	return steps
}

// lastOf is the index of version's last record in steps, -1 if none.
func lastOf(steps []StepRecord, version string) int {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Version == version {
			return i
		}
	}
	return -1
}

func recordOf(p *Plan) StepRecord {
	rec := StepRecord{Version: p.Pair.New, From: p.From, To: p.To}
	for _, c := range p.Changes {
		rec.Changes = append(rec.Changes, RecordedChange{Change: c})
	}
	return rec
}

// record pushes the plan's record onto After's.
func record(p *Plan, before *apiextensionsv1.CustomResourceDefinition) {
	rec := recordOf(p)
	p.Record = &rec
	setSteps(p.After, PushStep(Steps(before), rec))
}

// lastStep is the record of the step that brought version to stage, if its pair's last record is it.
func lastStep(crd *apiextensionsv1.CustomResourceDefinition, version string, stage Stage) (StepRecord, bool) {
	steps := Steps(crd)
	if i := lastOf(steps, version); i >= 0 && steps[i].To == stage {
		return steps[i], true
	}
	return StepRecord{}, false
}

// dropStep takes rec, its pair's last record, off crd's; the other pairs' stay.
func dropStep(crd *apiextensionsv1.CustomResourceDefinition, rec StepRecord) {
	steps := Steps(crd)
	if i := lastOf(steps, rec.Version); i >= 0 && steps[i].From == rec.From && steps[i].To == rec.To {
		setSteps(crd, slices.Delete(steps, i, i+1))
	}
}

func setSteps(crd *apiextensionsv1.CustomResourceDefinition, steps []StepRecord) {
	if len(steps) == 0 {
		delete(crd.Annotations, StepsAnnotation)
		if len(crd.Annotations) == 0 {
			crd.Annotations = nil
		}
		return
	}
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[StepsAnnotation] = EncodeSteps(steps)
}

// flag reads the value of one of a version's flags as a Change shows it.
func flag(v *apiextensionsv1.CustomResourceDefinitionVersion, f Field) (string, bool) {
	switch f {
	case FieldServed:
		return strconv.FormatBool(v.Served), true
	case FieldStorage:
		return strconv.FormatBool(v.Storage), true
	case FieldDeprecated:
		return strconv.FormatBool(v.Deprecated), true
	case FieldDeprecationWarning:
		return deref(v.DeprecationWarning), true
	}
	return "", false
}

// setFlag sets one of a version's flags to a value as a Change shows it.
func setFlag(v *apiextensionsv1.CustomResourceDefinitionVersion, f Field, value string) {
	switch f {
	case FieldServed:
		v.Served = value == "true"
	case FieldStorage:
		v.Storage = value == "true"
	case FieldDeprecated:
		v.Deprecated = value == "true"
	case FieldDeprecationWarning:
		v.DeprecationWarning = nil
		if value != "" {
			v.DeprecationWarning = &value
		}
	}
}
