package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// convertCRD is a CRD with conversion None whose v1 keeps every field of
// v1beta1: convert rewrites apiVersion and nothing else.
const convertCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.bench.example.com
spec:
  group: bench.example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}
`

// BenchmarkConvert measures `convert --in-place` of one file of many
// objects, offline (--crd-file): wall time, process start included. The
// time must grow with the objects, not with their square.
func BenchmarkConvert(b *testing.B) {
	bin := buildPlugin(b)
	dir := b.TempDir()
	crd := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(crd, []byte(convertCRD), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{500, 1000, 2000} {
		var src bytes.Buffer
		for i := range n {
			fmt.Fprintf(&src, "---\n# widget %d\napiVersion: bench.example.com/v1beta1\nkind: Widget\nmetadata:\n  name: w%d\n  namespace: default\nspec:\n  size: %d\n", i, i, i)
		}
		file := filepath.Join(dir, "widgets.yaml")
		b.Run("objects="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(file, src.Bytes(), 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				cmd := exec.Command(bin, "convert", "-f", file, "--to", "v1", "--crd-file", crd, "--in-place")
				cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "none"))
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
		})
	}
}
