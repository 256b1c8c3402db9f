package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
)

// A library error says its cause; the command line adds the way out, even
// when the error comes wrapped.
func TestLibraryErrorsGetTheirWayOut(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{migration.ErrClusterMigratorNotServed, "without --via=cluster"},
		{migration.ErrNotProven, "--accept-loss"},
		{migration.ErrStillServed, "kubectl crdversion status"},
		{migration.ErrChangedMeanwhile, "kubectl crdversion status"},
		{migration.ErrServingNotInEffect, "kubectl get crd"},
		{verify.ErrConverterUnproven, "create one object"},
		{manifest.ErrNotOffline, "in the file yourself"},
		{manifest.ErrStepsUnreadable, "put back what promote -f wrote"},
		{&verify.StaleRecordError{CRD: "widgets.example.com", Annotation: "crdversion.kubectl.io/checked-v1", Err: errors.New("forbidden")},
			"kubectl annotate crd widgets.example.com crdversion.kubectl.io/checked-v1- removes it"},
		{&manifest.JSONError{Path: "crd.json"}, "-f crd.json"},
		{&manifest.JSONError{Path: "crd.json"}, "convert it to YAML, or make the change by hand"},
		{migration.ErrKeepsChanging, "try again when it settles"},
		{manifest.ErrNotInPlace, "edit it by hand"},
	} {
		wrapped := fmt.Errorf("widgets.example.com: %w", tc.err)
		if got := withAdvice(wrapped.Error(), wrapped); !strings.Contains(got, tc.want) {
			t.Errorf("%v: got %q, want it to hold %q", tc.err, got, tc.want)
		}
	}
	if got := hintFor(errors.New("some other failure")); got != "" {
		t.Errorf("an error of no library type got a hint: %q", got)
	}
}
