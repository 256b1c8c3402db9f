package main

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/sandbox"
)

// BenchmarkStatus measures `status` on a cluster of many CRDs (BENCH_CRDS,
// default 500): wall time per run and API requests per run.
func BenchmarkStatus(b *testing.B) {
	crds := 500
	if s := os.Getenv("BENCH_CRDS"); s != "" {
		crds, _ = strconv.Atoi(s)
	}
	start := time.Now()
	sb := sandbox.StartT(b, sandbox.Options{})
	b.Logf("sandbox ready in %s", time.Since(start))
	start = time.Now()
	installCRDs(b, sb, crds)
	b.Logf("%d CRDs created in %s", crds, time.Since(start))

	for _, args := range [][]string{{"status"}, {"status", "-o", "wide"}, {"status", "-o", "json"}} {
		b.Run(args[len(args)-1]+"/crds="+strconv.Itoa(crds), func(b *testing.B) {
			var requests int64
			for b.Loop() {
				_, n, err := runInProcess(b, sb, args...)
				if err != nil {
					b.Fatal(err)
				}
				requests = n
			}
			b.ReportMetric(float64(requests), "requests/op")
		})
	}
}
