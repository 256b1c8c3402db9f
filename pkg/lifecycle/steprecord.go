package lifecycle

import (
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// StepsAnnotation holds, on the CRD or its manifest, what each step of the pair in flight changed,
// oldest first: unlike a rule, it tells a version the step deprecated or unserved from one already so.
const StepsAnnotation = "crdversion.kubectl.io/steps"

// maxRecordedSteps bounds the record: a pair has four steps forward.
const maxRecordedSteps = 8

// StepRecord is what one step changed.
type StepRecord struct {
	// Version is the pair's new version; From and To its stages.
	Version string           `json:"version"`
	From    Stage            `json:"from"`
	To      Stage            `json:"to"`
	Changes []RecordedChange `json:"changes"`
	// AnnotationsText is, for the step that first wrote the record into a file, the file's
	// metadata.annotations before it ("" for none): the last rollback puts it back.
	AnnotationsText *string `json:"annotationsText,omitempty"`
}

// RecordedChange is one change of a step, as the step saw it.
type RecordedChange struct {
	Change
	// Text is, in a file, the key's lines before the step ("" if absent), so rollback gives the file
	// back byte for byte; nil on a cluster.
	Text *string `json:"text,omitempty"`
}

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

// PushStep adds a step's record to its pair's; a step of another pair starts anew.
func PushStep(steps []StepRecord, rec StepRecord) []StepRecord {
	if n := len(steps); n > 0 && steps[n-1].Version != rec.Version {
		steps = nil
	}
	steps = append(slices.Clone(steps), rec)
	if len(steps) > maxRecordedSteps {
		steps = steps[len(steps)-maxRecordedSteps:]
	}
	return steps
}

func recordOf(p *Plan) StepRecord {
	rec := StepRecord{Version: p.Pair.New, From: p.From, To: p.To}
	for _, c := range p.Changes {
		rec.Changes = append(rec.Changes, RecordedChange{Change: c})
	}
	return rec
}

// record pushes the plan's record onto After's.
func (p *Plan) record(before *apiextensionsv1.CustomResourceDefinition) {
	rec := recordOf(p)
	p.Record = &rec
	setSteps(p.After, PushStep(Steps(before), rec))
}

// lastStep is the record of the step that brought version to stage, if the CRD holds one.
func lastStep(crd *apiextensionsv1.CustomResourceDefinition, version string, stage Stage) (StepRecord, bool) {
	steps := Steps(crd)
	if n := len(steps); n > 0 && steps[n-1].Version == version && steps[n-1].To == stage {
		return steps[n-1], true
	}
	return StepRecord{}, false
}

// dropStep takes rec, the last record, off crd's.
func dropStep(crd *apiextensionsv1.CustomResourceDefinition, rec StepRecord) {
	steps := Steps(crd)
	if n := len(steps); n > 0 && steps[n-1].Version == rec.Version && steps[n-1].To == rec.To {
		setSteps(crd, steps[:n-1])
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
