package render

import (
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

func TestKubebuilderMarkers(t *testing.T) {
	p := &lifecycle.Plan{Changes: []lifecycle.Change{
		{Version: "v1", Field: "storage", From: "false", To: "true"},
		{Version: "v1beta1", Field: "storage", From: "true", To: "false"},
		{Version: "v1beta1", Field: "deprecated", From: "false", To: "true"},
		{Version: "v1beta1", Field: "deprecationWarning", From: "", To: "use v1"},
		{Version: "v1alpha1", Field: "served", From: "true", To: "false"},
		{Version: "v1alpha0", Field: "version", From: "present", To: ""},
	}}
	got := strings.Join(kubebuilderMarkers(p), "\n")
	want := strings.Join([]string{
		"v1 types: add // +kubebuilder:storageversion",
		"v1beta1 types: remove // +kubebuilder:storageversion",
		`v1beta1 types: add // +kubebuilder:deprecatedversion:warning="use v1"`,
		"v1alpha1 types: add // +kubebuilder:unservedversion",
		"v1alpha0 types: add // +kubebuilder:skipversion (the Go types stay; controller-gen leaves v1alpha0 out of this CRD)",
	}, "\n")
	if got != want {
		t.Errorf("markers:\n%s\nwant:\n%s", got, want)
	}
}
