package auditlog

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkAuditLogRead reads a generated log of 200,000 events (an eighth
// of them completed requests to the custom resource): events a second, allocations.
func BenchmarkAuditLogRead(b *testing.B) {
	const n = 200_000
	path := filepath.Join(b.TempDir(), "audit.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := generate(f, n); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Resources: []schema.GroupResource{{Group: "example.com", Resource: "widgets"}}}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := Read(b.Context(), []string{path}, o)
		if err != nil {
			b.Fatal(err)
		}
		if res.Read.Events != n || res.Read.Requests != n/8 {
			b.Fatalf("read %+v", res.Read)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
