// Package cluster runs the plugin, through kubectl, against a real
// kube-apiserver (and, where a test needs it, kube-controller-manager) from
// k8s.io/kubernetes: what the CRD-only sandbox cannot show — RBAC,
// admission, priority and fairness, several API servers, the cluster's own
// storage version migrator. etcd is the ground truth for what is stored.
package cluster

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// shared is one kube-apiserver the tests share; each test works in CRDs
// and namespaces of its own.
var shared *fullsandbox.Cluster

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "crdversion-cluster-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := plugintest.Build(dir, "v0.0.0-cluster"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		if shared, err = fullsandbox.Start(fullsandbox.Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer shared.Stop()
		return m.Run()
	}())
}
