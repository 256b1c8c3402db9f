package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/transport"
)

// restConfig returns the client config the global flags describe. It sets
// no client-side rate limit where the kubeconfig sets none (cluster.
// NewClients reads QPS 0 so): every command bounds its own concurrency,
// a pass adapts to the server, and the API server's priority and
// fairness set the pace; client-go's default of 5 requests a second would
// make `status -o wide` on 500 CRDs, or a migration, take minutes.
func restConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-crdversion/" + version
	return cfg, nil
}

// clients are what the commands talk to a cluster with: pkg/cluster's
// bundle, and the mapper that resolves what kubectl accepts for a resource.
type clients struct {
	cluster.Clients
	toMapper func() (meta.RESTMapper, error)
}

// newClients builds the one bundle a command uses.
func newClients(flags *genericclioptions.ConfigFlags, one oneConnection) (*clients, error) {
	cfg, err := restConfig(flags)
	if err != nil {
		return nil, err
	}
	return newClientsFor(flags, cfg, one)
}

func newClientsFor(flags *genericclioptions.ConfigFlags, cfg *rest.Config, one oneConnection) (*clients, error) {
	c, err := cluster.NewClientsOver(cfg, one.connections())
	return &clients{Clients: c, toMapper: flags.ToRESTMapper}, err
}

// oneConnection is --one-connection: a command whose passes over objects
// would spread their requests over several connections (and so over
// every API server behind a load balancer) sends them over one.
type oneConnection bool

func (one *oneConnection) addFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar((*bool)(one), "one-connection", false, fmt.Sprintf("Send the requests over objects over one connection, so to one API server behind a load balancer (default: spread over %d connections, reaching every API server)", transport.DefaultConnections))
}

func (one oneConnection) connections() int {
	if one {
		return 1
	}
	return transport.DefaultConnections
}

// selectCRDs lists the CRDs once and finds those the names mean (every
// one for no names).
func (c *clients) selectCRDs(ctx context.Context, selector string, names ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	all, err := cluster.ListCRDs(ctx, c.CRDs, selector)
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
