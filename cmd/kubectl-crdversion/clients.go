package main

import (
	"context"
	"errors"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	svmclient "k8s.io/client-go/kubernetes/typed/storagemigration/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// restConfig returns the client config the global flags describe, with a
// rate limit that suits a command sending many small requests; client-go's
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

// passClients are the clients of a pass over many objects or CRDs, with no
// client-side limit (migrate.NewClients reads QPS 0 so): the pass's own
// limit and the API server set the pace.
func passClients(flags *genericclioptions.ConfigFlags) (migrate.Clients, error) {
	cfg, err := restConfig(flags)
	if err != nil {
		return migrate.Clients{}, err
	}
	cfg.QPS = 0
	return migrate.NewClients(cfg)
}

// clients are what the commands talk to a cluster with.
type clients struct {
	crds     apiextensionsclient.Interface
	metadata metadata.Interface
	dynamic  dynamic.Interface
	// migrations are the cluster's own StorageVersionMigrations.
	migrations svmclient.StoragemigrationV1Interface
	toMapper   func() (meta.RESTMapper, error)
}

func newClients(flags *genericclioptions.ConfigFlags) (*clients, error) {
	cfg, err := restConfig(flags)
	if err != nil {
		return nil, err
	}
	c := &clients{toMapper: flags.ToRESTMapper}
	if c.crds, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.migrations, err = svmclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// selectCRDs lists the CRDs once and finds those the names mean (every
// one for no names).
func (c *clients) selectCRDs(ctx context.Context, selector string, names ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	all, err := cluster.ListCRDs(ctx, c.crds, selector)
	if err != nil {
		return nil, err
	}
	return cluster.Select(all, names, c.toMapper)
}

// noDiscovery stands in for discovery where there is no cluster (-f).
func noDiscovery() (meta.RESTMapper, error) {
	return nil, errors.New("no cluster: names are matched against the files' CRDs only")
}

// newSightings keeps what the plugin saw of storage switches in kubectl's
// cache directory (--cache-dir), beside its discovery cache.
func newSightings(flags *genericclioptions.ConfigFlags) *migrate.Sightings {
	if flags.CacheDir == nil || *flags.CacheDir == "" {
		return migrate.NewSightings("")
	}
	return migrate.NewSightings(filepath.Join(*flags.CacheDir, "crdversion", "sightings"))
}
