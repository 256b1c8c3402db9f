package migration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every request the library sends that writes or could write is one that
// docs/safety.md names, with the check it goes through: a new one fails
// here until the document says what it writes and why that is safe.
func TestEveryWriteIsInTheSafetyDocument(t *testing.T) {
	documented := map[string]string{
		"migration.restoreAt Patch":          "| the re-store (`migrate`'s pass) |",
		"migration.restoreWhole Patch":       "the same write answers with the whole object",
		"verify.sendBack Update":             "| the per-object check's dry-run update |",
		"verify.ProveConverter Create":       "| the converter probe's dry-run create",
		"verify.ProveConverter Update":       "(or dry-run update of one object)",
		"migration.applyStep Update":         "| a lifecycle step |",
		"migration.returnFields Update":      "| handing a step's fields back to their owners |",
		"verify.record Patch":                "| a check's record |",
		"verify.recordCheck Patch":           "| a check's record |",
		"migration.prune UpdateStatus":       "| the prune |",
		"migration.MigrateViaCluster Create": "| `--via=cluster` | a StorageVersionMigration object",
		"cluster.Missing Create":             "| the permission check | SelfSubjectAccessReviews",
		"check.dryRunApply Create":           "| `check`'s server-side dry run of a new CRD |",
		"check.dryRunApply Update":           "| `check`'s server-side dry run of a new CRD |",
		"check.ownerApplies Patch":           "| `check`'s dry-run apply as the CRD's owner |",
		"migration.noteRefused Patch":        "| the note of objects left for data loss |",
		"migration.noteSwitchBack Patch":     "| the note of a switch back that would lose data |",
	}
	doc, err := os.ReadFile("../../../docs/safety.md")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, dir := range []string{".", "../verify", "../cluster", "../../check"} {
		for _, w := range writes(t, dir) {
			found = append(found, w)
			row, ok := documented[w]
			switch {
			case !ok:
				t.Errorf("%s writes, and docs/safety.md has no row for it: add one (what it writes, the check it goes through), then name it here", w)
			case !strings.Contains(string(doc), row):
				t.Errorf("%s: docs/safety.md lacks %q", w, row)
			}
		}
	}
	for w := range documented {
		if !slices.Contains(found, w) {
			t.Errorf("%s is named here but writes no more: take it out, and its row if no other write has it", w)
		}
	}
}

// writes lists "package.function Method" for every call of a method that
// writes (Create, Update, UpdateStatus, Patch, Apply, Delete) in the
// package's non-test files.
func writes(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if s, ok := c.Fun.(*ast.SelectorExpr); ok {
						switch s.Sel.Name {
						case "Create", "Update", "UpdateStatus", "Patch", "Apply", "Delete":
							w := file.Name.Name + "." + fn.Name.Name + " " + s.Sel.Name
							if !slices.Contains(out, w) {
								out = append(out, w)
							}
						}
					}
				}
				return true
			})
		}
	}
	return out
}
