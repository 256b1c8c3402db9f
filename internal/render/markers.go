package render

import (
	"fmt"
	"strconv"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// kubebuilderMarkers says how Go operator authors get the same result
// from controller-gen: the markers to add to or drop from each version's
// API types, so the next `make manifests` does not undo the step.
func kubebuilderMarkers(p *lifecycle.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		add := func(marker string) { out = append(out, fmt.Sprintf("%s types: add // %s", c.Version, marker)) }
		drop := func(marker string) { out = append(out, fmt.Sprintf("%s types: remove // %s", c.Version, marker)) }
		switch {
		case c.Field == lifecycle.FieldStorage && c.To == "true":
			add("+kubebuilder:storageversion")
		case c.Field == lifecycle.FieldStorage:
			drop("+kubebuilder:storageversion")
		case c.Field == lifecycle.FieldDeprecationWarning && c.To != "":
			add("+kubebuilder:deprecatedversion:warning=" + strconv.Quote(c.To))
		case c.Field == lifecycle.FieldDeprecated && c.To == "false":
			drop("+kubebuilder:deprecatedversion")
		case c.Field == lifecycle.FieldServed && c.To == "false":
			add("+kubebuilder:unservedversion")
		case c.Field == lifecycle.FieldServed:
			drop("+kubebuilder:unservedversion")
		case c.Field == lifecycle.FieldVersion && c.To == "":
			out = append(out, fmt.Sprintf("%s types: add // +kubebuilder:skipversion (the Go types stay; controller-gen leaves %s out of this CRD)", c.Version, c.Version))
		case c.Field == lifecycle.FieldVersion:
			out = append(out, fmt.Sprintf("%s types: add the %s API package with its schema", c.Version, c.Version))
		}
	}
	return out
}
