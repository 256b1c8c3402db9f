package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// manyCRDs starts a sandbox with BENCH_CRDS (default 500) CRDs and builds
// the plugin.
func manyCRDs(b *testing.B) (sb *sandbox.Sandbox, fx fixtures.Clients, bin string, crds int) {
	crds = envInt("BENCH_CRDS", 500)
	bin = buildPlugin(b)
	sb = sandbox.StartT(b, sandbox.Options{})
	fx, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := fx.InstallCRDs(b.Context(), crds); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d CRDs created in %s", crds, time.Since(start))
	return sb, fx, bin, crds
}

// runCLI runs the plugin binary once per iteration and reports the API
// requests of the last run (client-go's -v=6 log counts them).
func runCLI(b *testing.B, sb *sandbox.Sandbox, bin string, args ...string) {
	requests := 0
	for b.Loop() {
		cmd := exec.Command(bin, append(args, "-v=6")...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+sb.KubeconfigPath())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 3 {
				b.Fatalf("%v: %v\n%s", args, err, stderr.Bytes())
			}
		}
		requests = fixtures.Requests(stderr.String())
	}
	b.ReportMetric(float64(requests), "requests/op")
}

// BenchmarkStatus measures `status` on a cluster of many CRDs: wall time
// (including the process start) and API requests per run; then again once
// every CRD's spec has changed since it was created (as upgrades leave
// them), where status lists each CRD's objects for managedFields entries
// at versions it no longer serves.
func BenchmarkStatus(b *testing.B) {
	sb, fx, bin, crds := manyCRDs(b)
	all := [][]string{{"status"}, {"status", "-o", "wide"}, {"status", "-o", "json"}}
	for _, args := range all {
		b.Run(args[len(args)-1]+"/crds="+strconv.Itoa(crds), func(b *testing.B) {
			runCLI(b, sb, bin, args...)
		})
	}
	api := fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	list, err := api.List(b.Context(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, crd := range list.Items {
		// The API server's own controllers write the status meanwhile.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live, err := api.Get(b.Context(), crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			live.Spec.Names.Categories = append(live.Spec.Names.Categories, "changed")
			_, err = api.Update(b.Context(), live, metav1.UpdateOptions{})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range all {
		b.Run(args[len(args)-1]+"/changed/crds="+strconv.Itoa(crds), func(b *testing.B) {
			runCLI(b, sb, bin, args...)
		})
	}
}

// BenchmarkCheck measures `check` of a release that moves every CRD of a
// cluster one step (v1 becomes storage, v1beta1 deprecated): wall time and
// API requests per run.
func BenchmarkCheck(b *testing.B) {
	sb, fx, bin, crds := manyCRDs(b)
	list, err := fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().List(b.Context(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var manifests []byte
	for _, live := range list.Items {
		next := apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: live.Name}, Spec: live.Spec}
		for i := range next.Spec.Versions {
			v := &next.Spec.Versions[i]
			v.Storage, v.Deprecated = v.Name == "v1", v.Name == "v1beta1"
		}
		raw, err := yaml.Marshal(next)
		if err != nil {
			b.Fatal(err)
		}
		manifests = append(append(manifests, "---\n"...), raw...)
	}
	file := filepath.Join(b.TempDir(), "release.yaml")
	if err := os.WriteFile(file, manifests, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("crds="+strconv.Itoa(crds), func(b *testing.B) {
		runCLI(b, sb, bin, "check", "-f", file)
	})
}
