package migrate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	return "", fmt.Errorf(`invalid dry-run value (%s): must be "none", "server", or "client"`, s)
}

// FieldManager is the name the plugin's writes are recorded under in
// managedFields.
const FieldManager = "kubectl-crdversion"

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
		fieldManager = FieldManager
	}
	return metav1.UpdateOptions{FieldManager: fieldManager, DryRun: d.sent()}
}
