package convert

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AnswerError is a converter's answer the API server would refuse: no
// object converted through it may be trusted, so nothing is written.
type AnswerError struct {
	CRD string
	// Object is ns/name of the object the answer was wrong about, or "".
	Object string
	// Where is that object's file:line: document N, when known.
	Where  string
	Reason string
}

func (e *AnswerError) Error() string {
	switch {
	case e.Object == "":
		return fmt.Sprintf("%s's converter answered wrongly: %s", e.CRD, e.Reason)
	case e.Where == "":
		return fmt.Sprintf("%s's converter answered wrongly for %s: %s", e.CRD, e.Object, e.Reason)
	}
	return fmt.Sprintf("%s: %s's converter answered wrongly for %s: %s", e.Where, e.CRD, e.Object, e.Reason)
}

// checkAnswer checks one converted object as the API server does: at the
// version asked for, with the kind, name, namespace and uid it was sent
// with, and labels and annotations (the only metadata a converter may
// change) that are valid.
func checkAnswer(in, out map[string]any, desired string) error {
	if got := str(out, "apiVersion"); got != desired {
		return fmt.Errorf("must be at %s, is at %q", desired, got)
	}
	for _, f := range []struct{ name, in, out string }{
		{"kind", str(in, "kind"), str(out, "kind")},
		{"name", meta(in, "name"), meta(out, "name")},
		{"namespace", meta(in, "namespace"), meta(out, "namespace")},
		{"uid", meta(in, "uid"), meta(out, "uid")},
	} {
		if f.in != f.out {
			return fmt.Errorf("must have the same %s: %q became %q", f.name, f.in, f.out)
		}
	}
	m, ok := out["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("missing metadata in the converted object")
	}
	labels, err := stringMap(m, "labels")
	if err != nil {
		return err
	}
	annotations, err := stringMap(m, "annotations")
	if err != nil {
		return err
	}
	errs := metav1validation.ValidateLabels(labels, field.NewPath("metadata", "labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(annotations, field.NewPath("metadata", "annotations"))...)
	return errs.ToAggregate()
}

// restoreMeta gives the converted object the metadata it was sent with,
// keeping only the converter's labels and annotations, as the API server
// does: whatever else a converter does to metadata is not kept.
func restoreMeta(original, converted map[string]any) map[string]any {
	out := runtime.DeepCopyJSONValue(converted).(map[string]any)
	answered, _ := out["metadata"].(map[string]any)
	restored, _ := runtime.DeepCopyJSONValue(original["metadata"]).(map[string]any)
	if restored == nil {
		restored = map[string]any{}
	}
	for _, f := range []string{"labels", "annotations"} {
		if v, ok := answered[f]; ok && v != nil {
			restored[f] = v
		} else {
			delete(restored, f)
		}
	}
	out["metadata"] = restored
	return out
}

func stringMap(m map[string]any, key string) (map[string]string, error) {
	raw, ok := m[key]
	if !ok || raw == nil {
		return nil, nil
	}
	in, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("metadata.%s is a %T, not a map", key, raw)
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("metadata.%s[%s] must be a string, is a %T", key, k, v)
		}
		out[k] = s
	}
	return out, nil
}

func str(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return s
}

func meta(obj map[string]any, key string) string {
	m, _ := obj["metadata"].(map[string]any)
	return str(m, key)
}

// objectName is ns/name, or name for a cluster-scoped object or one whose
// manifest leaves the namespace to the command that applies it.
func objectName(obj map[string]any) string {
	if ns := meta(obj, "namespace"); ns != "" {
		return ns + "/" + meta(obj, "name")
	}
	return meta(obj, "name")
}
