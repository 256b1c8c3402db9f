package main

import (
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func TestClusterArgsPasteAsOneWordEach(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		kubeconfig, context string
		want                string
	}{
		{"", "", ""},
		{"", "prod", " --context prod"},
		{"/home/me/.kube/fleet", "arn:aws:eks:eu-west-1:1:cluster/prod", " --kubeconfig /home/me/.kube/fleet --context arn:aws:eks:eu-west-1:1:cluster/prod"},
		{"/tmp/my configs/k", "it's", ` --kubeconfig '/tmp/my configs/k' --context 'it'\''s'`},
		{"", "$(rm -rf ~)", ` --context '$(rm -rf ~)'`},
	} {
		flags := genericclioptions.NewConfigFlags(false)
		flags.KubeConfig, flags.Context = str(c.kubeconfig), str(c.context)
		if got := clusterArgs(flags); got != c.want {
			t.Errorf("clusterArgs(%q, %q) = %q, want %q", c.kubeconfig, c.context, got, c.want)
		}
	}
}
