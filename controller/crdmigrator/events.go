package crdmigrator

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	normal  = corev1.EventTypeNormal
	warning = corev1.EventTypeWarning
)

// maxNote is events.k8s.io/v1's limit on an Event's note.
const maxNote = 1024

// event records an Event on the CRD. The reference carries its kind, so
// the manager's scheme need not know CustomResourceDefinitions.
func (m *Migrator) event(crd *apiextensionsv1.CustomResourceDefinition, kind, reason, action, note string) {
	if len(note) > maxNote {
		// Cut on a byte boundary, then drop a rune the cut split.
		note = strings.ToValidUTF8(note[:maxNote-3], "") + "..."
	}
	ref := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: crd.Name, UID: crd.UID, ResourceVersion: crd.ResourceVersion},
	}
	m.events.Eventf(ref, nil, kind, reason, action, "%s", note)
}
