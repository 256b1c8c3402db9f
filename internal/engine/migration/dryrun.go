package migration

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
)

// DryRun is kubectl's --dry-run: none, client (nothing sent) or server
// (sent with dryRun=All: validated and admitted, never persisted).
type DryRun string

const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

// ParseDryRun accepts kubectl's values.
func ParseDryRun(s string) (DryRun, error) {
	switch DryRun(s) {
	case DryRunNone, DryRunClient, DryRunServer:
		return DryRun(s), nil
	case "":
		return DryRunNone, nil
	}
	return "", invalidDryRunError(s)
}

// invalidDryRunError is ParseDryRun's refusal in kubectl's words, and
// ErrInvalidDryRun to errors.Is.
type invalidDryRunError string

func (e invalidDryRunError) Error() string {
	return fmt.Sprintf(`invalid dry-run value (%s): must be "none", "server", or "client"`, string(e))
}

func (e invalidDryRunError) Unwrap() error { return ErrInvalidDryRun }

// ErrInvalidDryRun: a DryRun that is none of none, client, server (or ""),
// refused before anything is sent.
var ErrInvalidDryRun = errors.New(`invalid dry run: must be "none", "server" or "client"`)

// check refuses an invalid value, and "client" where passes (nothing to show unsent).
func (d DryRun) check(passes bool) error {
	switch d {
	case "", DryRunNone, DryRunServer:
		return nil
	case DryRunClient:
		if passes {
			return ErrClientDryRun
		}
		return nil
	}
	return fmt.Errorf("%w: %q", ErrInvalidDryRun, string(d))
}

// persists reports a run whose writes are persisted; the zero value is none.
func (d DryRun) persists() bool { return d == "" || d == DryRunNone }

// sent is the dryRun field of a request: All for a server dry run.
func (d DryRun) sent() []string {
	if d == DryRunServer {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// updateOptions name the update's field manager ("" for the default).
func (d DryRun) updateOptions(fieldManager string) metav1.UpdateOptions {
	if fieldManager == "" {
		fieldManager = cluster.FieldManager
	}
	return metav1.UpdateOptions{FieldManager: fieldManager, DryRun: d.sent()}
}
