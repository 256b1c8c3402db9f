package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/sandbox"
)

// BenchmarkCheck measures `check` of a release that moves every CRD of a
// cluster one step (BENCH_CRDS, default 500: v1 becomes storage, v1beta1
// deprecated): wall time and API requests per run.
func BenchmarkCheck(b *testing.B) {
	crds := 500
	if s := os.Getenv("BENCH_CRDS"); s != "" {
		crds, _ = strconv.Atoi(s)
	}
	sb := sandbox.StartT(b, sandbox.Options{})
	start := time.Now()
	installCRDs(b, sb, crds)
	b.Logf("%d CRDs created in %s", crds, time.Since(start))
	clients, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		b.Fatal(err)
	}
	list, err := clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().List(b.Context(), metav1.ListOptions{})
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
		var requests int64
		for b.Loop() {
			_, n, err := runInProcess(b, sb, "check", "-f", file)
			if err != nil {
				b.Fatal(err)
			}
			requests = n
		}
		b.ReportMetric(float64(requests), "requests/op")
	})
}
