package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

// Each command's Validate refuses the flag combinations that cannot work,
// in words that name the flag, before anything is sent; and lets through
// what its defaults make.
func TestValidate(t *testing.T) {
	valid := func() migrationOptions {
		return migrationOptions{Concurrency: 8, PageSize: 500, WaitTimeout: time.Minute, SwitchGrace: time.Minute}
	}
	migrateWith := func(edit func(*MigrateOptions)) *MigrateOptions {
		o := &MigrateOptions{migrationOptions: valid(), All: true, Prune: true, Via: viaPlugin, fleetFlags: fleetFlags{Parallel: 1}}
		edit(o)
		return o
	}
	oneCluster := stepOptions{clusterTarget: clusterTarget{fleetFlags: fleetFlags{Parallel: 1}}}
	for _, tc := range []struct {
		name string
		o    interface{ Validate() error }
		want string // "" for valid
	}{
		{"migrate: the defaults", migrateWith(func(*MigrateOptions) {}), ""},
		{"migrate: neither names nor --all", migrateWith(func(o *MigrateOptions) { o.All = false }), "name the CRDs to migrate, or pass --all"},
		{"migrate: names and --all", migrateWith(func(o *MigrateOptions) { o.Names = []string{"widgets"} }), "(not both)"},
		{"migrate: an unknown --via", migrateWith(func(o *MigrateOptions) { o.Via = "kubectl" }), `--via must be "plugin" or "cluster"`},
		{"migrate: --via=cluster cleans no managedFields", migrateWith(func(o *MigrateOptions) { o.Via, o.CleanManagedFields = viaCluster, true }), "--clean-managed-fields needs the plugin's own pass"},
		{"migrate: --via=cluster always prunes", migrateWith(func(o *MigrateOptions) { o.Via, o.Prune = viaCluster, false }), "--prune=false is not possible with --via=cluster"},
		{"migrate: --dry-run=client", migrateWith(func(o *MigrateOptions) { o.dryRun = migration.DryRunClient }), `use "server"`},
		{"migrate: --concurrency 0", migrateWith(func(o *MigrateOptions) { o.Concurrency = 0 }), "--concurrency must be between 1 and"},
		{"migrate: --concurrency past the bound", migrateWith(func(o *MigrateOptions) { o.Concurrency = pass.MaxConcurrency + 1 }), "--concurrency must be between 1 and"},
		{"migrate: --parallel 0", migrateWith(func(o *MigrateOptions) { o.Parallel = 0 }), "--parallel must be at least 1"},
		{"migrate: --page-size 0", migrateWith(func(o *MigrateOptions) { o.PageSize = 0 }), "--page-size must be at least 1"},
		{"migrate: a negative --switch-grace", migrateWith(func(o *MigrateOptions) { o.SwitchGrace = -time.Second }), "must not be negative"},
		{"migrate: a negative --qps", migrateWith(func(o *MigrateOptions) { o.QPS = -1 }), "--qps and --burst must not be negative"},
		{"promote: --conversion-from-file alone", &PromoteOptions{stepOptions: oneCluster, ConversionFromFile: true}, "--conversion-from-file needs --from-file"},
		{"promote: an unknown stage", &PromoteOptions{stepOptions: oneCluster, To: "gone"}, `unknown stage "gone"`},
		{"promote: -f with --dry-run=server", &PromoteOptions{stepOptions: stepOptions{Filename: "crd.yaml", dryRun: migration.DryRunServer}}, "--dry-run=server needs a cluster"},
		{"promote: a negative --wait-timeout", &PromoteOptions{stepOptions: stepOptions{WaitTimeout: -time.Second}}, "--wait-timeout must not be negative"},
		{"rollback: -f on a fleet", &RollbackOptions{stepOptions: stepOptions{Filename: "crd.yaml", clusterTarget: clusterTarget{fleetFlags: fleetFlags{Parallel: 1, AllContexts: true}}}}, "-f edits a file: no fleet"},
		{"rollback: the defaults", &RollbackOptions{stepOptions: stepOptions{WaitTimeout: time.Minute, clusterTarget: clusterTarget{fleetFlags: fleetFlags{Parallel: 1}}}}, ""},
		{"status: an invalid selector", &StatusOptions{Selector: "a in (b"}, "invalid selector"},
		{"status: -o wide of files", &StatusOptions{Filenames: []string{"crd.yaml"}, format: render.FormatWide}, "-o wide counts objects on a cluster"},
		{"verify: --concurrency 0", &VerifyOptions{}, "--concurrency must be between 1 and"},
		{"usage: --page-size 0", &UsageOptions{}, "--page-size must be at least 1"},
		{"convert: --in-place with -o json prints the report", &ConvertOptions{InPlace: true, format: render.FormatJSON, document: true}, ""},
		{"convert: --in-place of stdin", &ConvertOptions{InPlace: true, format: render.FormatYAML, Filenames: []string{manifest.Stdin}}, "--in-place needs files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
