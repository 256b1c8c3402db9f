package lifecycle

import (
	"fmt"
)

// GitOps is the GitOps tool that syncs a CRD from Git: a live edit is reverted at its next sync.
type GitOps struct {
	Tool string `json:"tool"`
	// Evidence is the label, annotation or field manager that tells.
	Evidence string `json:"evidence"`
}

// Reverts says what the owner's next sync does to a live edit, and where the change belongs.
func (g GitOps) Reverts(crd string) string {
	return fmt.Sprintf("%s is synced by %s (%s): a live edit of spec.versions would be reverted at its next sync, so the change belongs in the CRD manifest it syncs", crd, g.Tool, g.Evidence)
}
