package main

import (
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// restConfig returns the client config the global flags describe, with a
// rate limit that suits a command sending many small reads; client-go's
// default (5/s) would make `status -o wide` on 500 CRDs take minutes.
func restConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "kubectl-crdversion/" + version
	return cfg, nil
}
