package main

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	kubeapiserver "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// apiServerFlags make the test server a cluster the plugin meets in
// production: RBAC instead of allow-all, and the admission plugins whose
// effect on a migration the tests exercise.
var apiServerFlags = []string{
	"--authorization-mode=Node,RBAC",
	"--enable-admission-plugins=NamespaceLifecycle,MutatingAdmissionPolicy,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook",
	"--enable-priority-and-fairness=true",
}

// startAPIServer runs kube-apiserver in this process on etcdEndpoint and
// returns its loopback (system:masters) client config and a stop function.
func startAPIServer(ctx context.Context, tb *processTB, etcdEndpoint string, extraFlags []string) (*rest.Config, func(), error) {
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdEndpoint}
	opts := kubeapiserver.NewDefaultTestServerOptions()
	// The invariant checks scrape metrics at teardown to fail a Go test;
	// a sandbox stopped with Ctrl-C has no test to fail.
	opts.DisableInvariantChecks = true
	server, err := kubeapiserver.StartTestServer(ktesting.InitCtx(ctx, tb), opts, append(apiServerFlags, extraFlags...), storage)
	if err != nil {
		return nil, nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	return server.ClientConfig, server.TearDownFn, nil
}
