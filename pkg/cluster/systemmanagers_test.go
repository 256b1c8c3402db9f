package cluster_test

import (
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// The plugin's own field manager is named twice, since pkg/migrate imports
// pkg/cluster; this keeps the two the same.
func TestPluginIsASystemManager(t *testing.T) {
	if !cluster.IsSystemManager(migrate.FieldManager) {
		t.Errorf("%q (migrate.FieldManager) is not left out of usage", migrate.FieldManager)
	}
}
