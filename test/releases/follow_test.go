package releases

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	crdresults "github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

func kueue(v string) release {
	return release{module: "sigs.k8s.io/kueue", version: v, dirs: []string{"config/components/crd/bases"}}
}

func gatewayExperimental(v string) release {
	return release{module: "sigs.k8s.io/gateway-api", version: v, dirs: []string{"config/crd/experimental"}}
}

// follows are moves between releases that check refuses (exit 3), taken
// the way its words say.
var follows = []struct {
	project  string
	from, to release
}{
	// v0.9.0 adds v1beta1 as storage of multikueueclusters and
	// multikueueconfigs and removes v1alpha1, their storage until then.
	{project: "Kueue", from: kueue("v0.8.2"), to: kueue("v0.9.0")},
	// A downgrade: 1.0.0 stores GRPCRoute at v1alpha2 and lacks v1, the
	// storage version of 1.1.0.
	{project: "Gateway API experimental, downgraded", from: gatewayExperimental("v1.1.0"), to: gatewayExperimental("v1.0.0")},
}

// maxFixes bounds the rounds of check and its first error's fix: each
// round must leave one error fewer.
const maxFixes = 8

// TestFollowingTheFixes installs a release with objects of every served
// version, then does what a new user does with check's words: run check
// against the new release, take the first error's fix and run its commands
// in order as printed (NEW_MANIFEST the CRD's file; "then apply" is the
// owner's server-side apply of that CRD), and check again, until check
// exits 0. Then the owner applies the new release, not forced, and every
// object's client applies it again: the API server must take all of it. A
// fix with no command, or a command the plugin refuses, is a dead end.
func TestFollowingTheFixes(t *testing.T) {
	for _, f := range follows {
		t.Run(strings.ReplaceAll(f.project+" "+f.from.version+" → "+f.to.version, " ", "_"), func(t *testing.T) {
			ctx := t.Context()
			fromDirs, toDirs := crdPaths(t, f.from), crdPaths(t, f.to)
			read := func(paths []string) []*apiextensionsv1.CustomResourceDefinition {
				found, err := manifest.ReadCRDs(ctx, paths, true, nil)
				if err != nil {
					t.Fatal(err)
				}
				return found.CRDs
			}
			old, next := read(fromDirs), read(toDirs)
			sb := sandbox.StartT(t, sandbox.Options{})
			c, err := fixtures.NewClients(sb.RestConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, crd := range old {
				if err := applyCRD(ctx, c, crd, false); err != nil {
					t.Fatalf("installing %s: %v", crd.Name, err)
				}
			}
			for _, crd := range old {
				if err := waitServed(ctx, c, crd); err != nil {
					t.Fatal(err)
				}
			}
			probes, _ := createProbes(ctx, c, old)
			if len(probes) == 0 {
				t.Fatal("no object could be created")
			}
			files := manifestFiles(t, toDirs)
			byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
			for _, n := range next {
				byName[n.Name] = n
			}
			kube := []string{"--kubeconfig", sb.KubeconfigPath()}
			checkArgs := append(fileArgs("-f", toDirs), kube...)
			errors := -1
			for round := 0; ; round++ {
				run := runCheck(t, checkArgs...)
				if run.code == 0 {
					break
				}
				i := slices.IndexFunc(run.report.Findings, func(f crdresults.Finding) bool { return f.Severity == lifecycle.SeverityError })
				if i < 0 || round == maxFixes || (errors >= 0 && run.report.Errors >= errors) {
					t.Fatalf("round %d: check exits %d with %d errors (before: %d):\n%s", round, run.code, run.report.Errors, errors, run.table(t))
				}
				errors = run.report.Errors
				first := run.report.Findings[i]
				t.Logf("round %d: %s %s (%s), %d errors", round, first.CRD, first.Version, first.Rule, errors)
				ran := 0
				for _, a := range first.Fix {
					switch {
					case a.Command != "":
						args := strings.Fields(strings.TrimPrefix(a.Command, "kubectl crdversion "))
						for j, arg := range args {
							if arg == "NEW_MANIFEST" {
								args[j] = files[first.CRD]
							}
						}
						if args[0] == "migrate" {
							// Nothing else writes here: no write can be in flight.
							args = append(args, "--switch-grace=0")
						}
						code, out, errOut := runPlugin(t, append(args, kube...)...)
						t.Logf("  %s: exit %d", strings.Join(args, " "), code)
						if code != 0 {
							t.Fatalf("a dead end: %s's fix (%s) step %q exits %d:\n%s%s", first.CRD, first.Rule, a.Command, code, out, errOut)
						}
						ran++
					case strings.HasPrefix(a.Text, "then apply"):
						if err := applyCRD(ctx, c, byName[first.CRD], false); err != nil {
							t.Fatalf("%s's fix (%s): the owner's apply: %v", first.CRD, first.Rule, err)
						}
						if err := waitServed(ctx, c, byName[first.CRD]); err != nil {
							t.Fatal(err)
						}
						ran++
					}
				}
				if ran == 0 {
					t.Fatalf("a dead end: %s's fix (%s) has no command: %+v", first.CRD, first.Rule, first.Fix)
				}
			}
			a, err := upgrade(ctx, c, next, probes)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("API server: %s", a)
			if a.exit() != 0 {
				t.Errorf("after following check's fixes, the API server's answer is %d: %s\nrefused: %v\nbroken: %v", a.exit(), a, a.refused, a.broken)
			}
		})
	}
}

// manifestFiles maps each CRD's name to the file in dirs that holds it.
func manifestFiles(t *testing.T, dirs []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			found, err := manifest.ReadCRDs(t.Context(), []string{path}, true, nil)
			if err != nil {
				return err
			}
			for _, crd := range found.CRDs {
				out[crd.Name] = path
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
