package releases

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// crdFile is a manifest file of a release and the CRDs it holds.
type crdFile struct {
	path  string
	names []string
}

// crdFiles are the files of dirs that hold CRDs, as a user applies them
// one by one.
func crdFiles(t *testing.T, dirs []string) []crdFile {
	t.Helper()
	var out []crdFile
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			found, err := manifest.ReadCRDs(t.Context(), []string{path}, false, nil)
			if err != nil {
				return err
			}
			f := crdFile{path: path}
			for _, crd := range found.CRDs {
				f.names = append(f.names, crd.Name)
			}
			if len(f.names) > 0 {
				out = append(out, f)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// errorsOf are the CRDs check found an error of rule for.
func errorsOf(run checkRun, rule string) []string {
	var out []string
	for _, f := range run.report.Findings {
		if f.Rule == rule && f.Severity == lifecycle.SeverityError && !slices.Contains(out, f.CRD) {
			out = append(out, f.CRD)
		}
	}
	slices.Sort(out)
	return out
}

// clientSidePair installs the first release as a user of kubectl apply
// (client-side) does, kubectl create for a CRD apply refuses, and asks
// real kubectl, as a server-side dry run, what the new release's apply
// gets: kubectl apply for each CRD installed so, kubectl replace for each
// created. check's exit code must be its answer, and its
// lastAppliedTooLong errors the CRDs refused as too long.
func clientSidePair(t *testing.T, p pair, sb *sandbox.Sandbox, c fixtures.Clients, dirs [][]string, sets [][]*apiextensionsv1.CustomResourceDefinition) result {
	kubectl := func(args ...string) plugintest.Result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), sb.KubeconfigPath(), t.TempDir(), "", args...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// One apply of every file, as kubectl apply -f does; a CRD it refuses
	// is not there after, and is created instead.
	var args []string
	for _, f := range crdFiles(t, dirs[0]) {
		args = append(args, "-f", f.path)
	}
	applied := kubectl(append([]string{"apply"}, args...)...)
	created := map[string]bool{}
	for _, f := range crdFiles(t, dirs[0]) {
		if _, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), f.names[0], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			continue
		}
		if !strings.Contains(applied.Stderr, "Too long") {
			t.Fatalf("kubectl apply: %s", applied.Stderr)
		}
		plugintest.MustCode(t, kubectl("create", "-f", f.path), 0)
		for _, n := range f.names {
			created[n] = true
		}
	}
	// Established, the API server's controllers have written the status:
	// no objects are written here, so nothing waits for more.
	for _, crd := range sets[0] {
		if _, err := c.WaitEstablished(t.Context(), crd.Name); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("created, not applied (kubectl apply refused them): %d of %d CRDs", len(created), len(sets[0]))

	r := result{pair: p.String(), onlineOnly: true}
	online := runCheck(t, append(fileArgs("-f", dirs[1]), "--kubeconfig", sb.KubeconfigPath())...)
	r.exit, r.before = online.code, decisiveAt(online.report)
	// Each file on its own, so that each answer is its CRD's; a few at a
	// time.
	files := crdFiles(t, dirs[1])
	answers := make([]plugintest.Result, len(files))
	how := make([]string, len(files))
	var g errgroup.Group
	g.SetLimit(4)
	for i, f := range files {
		how[i] = "apply"
		if created[f.names[0]] {
			how[i] = "replace"
		}
		home := t.TempDir()
		g.Go(func() (err error) {
			answers[i], err = plugintest.Kubectl(t.Context(), sb.KubeconfigPath(), home, "", how[i], "-f", f.path, "--dry-run=server")
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var tooLong []string
	for i, f := range files {
		if answers[i].Code == 0 {
			r.server.crds++
			continue
		}
		r.server.refused = append(r.server.refused, fmt.Sprintf("kubectl %s -f %s: %s", how[i], filepath.Base(f.path), strings.TrimSpace(answers[i].Stderr)))
		if strings.Contains(answers[i].Stderr, "Too long") {
			tooLong = append(tooLong, f.names...)
		}
	}
	slices.Sort(tooLong)
	judge(t, r, online)
	if found := errorsOf(online, "lastAppliedTooLong"); !slices.Equal(found, tooLong) {
		t.Errorf("check's lastAppliedTooLong errors name %v; kubectl apply was refused as too long for %v", found, tooLong)
	}
	return r
}

// promotedPair applies the first release server-side as kubectl does, runs
// the plugin's promote, and then has the CRDs' owner apply the new release
// server-side, for real, not forced. check's exit code must be the API
// server's answer, and its applyConflict errors the CRDs whose apply met a
// conflict.
func promotedPair(t *testing.T, p pair, sb *sandbox.Sandbox, c fixtures.Clients, dirs [][]string, sets [][]*apiextensionsv1.CustomResourceDefinition) result {
	ctx := t.Context()
	for _, crd := range sets[0] {
		if err := applyCRD(ctx, c, crd, false); err != nil {
			t.Fatalf("installing %s: %v", crd.Name, err)
		}
	}
	for _, crd := range sets[0] {
		if err := waitServed(ctx, c, crd); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runPlugin(t, append(append([]string{"promote"}, p.promote...), "--kubeconfig", sb.KubeconfigPath())...)
	if code != 0 {
		t.Fatalf("promote %s: exit %d\n%s%s", strings.Join(p.promote, " "), code, out, errOut)
	}
	t.Logf("promote %s:\n%s%s", strings.Join(p.promote, " "), out, errOut)

	r := result{pair: p.String(), onlineOnly: true}
	online := runCheck(t, append(fileArgs("-f", dirs[1]), "--kubeconfig", sb.KubeconfigPath())...)
	r.exit, r.before = online.code, decisiveAt(online.report)
	var conflicts []string
	for _, n := range sets[1] {
		err := applyCRD(ctx, c, n, false)
		if err == nil {
			r.server.crds++
			continue
		}
		r.server.refused = append(r.server.refused, fmt.Sprintf("%s: %v", n.Name, err))
		if apierrors.IsConflict(err) {
			conflicts = append(conflicts, n.Name)
		}
	}
	slices.Sort(conflicts)
	judge(t, r, online)
	if found := errorsOf(online, "applyConflict"); !slices.Equal(found, conflicts) {
		t.Errorf("check's applyConflict errors name %v; the owner's apply met a conflict on %v", found, conflicts)
	}
	return r
}

// judge compares check's exit code with the API server's answer.
func judge(t *testing.T, r result, online checkRun) {
	t.Helper()
	t.Logf("API server: %s", r.server)
	for _, s := range r.server.refused {
		t.Logf("refused: %.400s", s)
	}
	if r.exit != r.server.exit() {
		t.Errorf("check exits %d, the API server's answer is %d: %s\ncheck printed:\n%s", r.exit, r.server.exit(), r.server, online.table(t))
	}
}

// runPlugin runs the plugin under test with args.
func runPlugin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(binDir, "kubectl-crdversion"), args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}
