package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
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

// clients are what the commands talk to a cluster with: internal/cluster's
// bundle, and the mapper that resolves what kubectl accepts for a resource.
type clients struct {
	cluster.Clients
	toMapper func() (meta.RESTMapper, error)
	own      *usage.OwnRequests
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
	own, err := newOwnRequests(flags, cfg)
	if err != nil {
		return nil, err
	}
	counted := rest.CopyConfig(cfg)
	counted.Wrap(own.Wrap)
	c, err := cluster.NewClientsOver(counted, one.connections())
	return &clients{Clients: c, toMapper: flags.ToRESTMapper, own: own}, err
}

// ownRequestsOfRun are the counts of every bundle of clients the command
// built (one per cluster, several at once in a fleet): runE settles them
// once the command has run.
var ownRequestsOfRun struct {
	sync.Mutex
	all []*usage.OwnRequests
}

// newOwnRequests counts what the command's clients send to deprecated
// versions, so that usage can tell this plugin's own requests from other
// clients' (usage.OwnRequests); its own reads of CRDs and /metrics go
// through clients of cfg that count nothing.
func newOwnRequests(flags *genericclioptions.ConfigFlags, cfg *rest.Config) (*usage.OwnRequests, error) {
	plain := rest.CopyConfig(cfg)
	plain.QPS, plain.Burst = -1, 0 // no client-side limit: a few requests at most
	crds, err := apiextensionsclient.NewForConfig(plain)
	if err != nil {
		return nil, err
	}
	getCRD := func(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
		return crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	}
	own, err := usage.NewOwnRequests(ownRecords(flags), getCRD, plain)
	if err != nil {
		return nil, err
	}
	ownRequestsOfRun.Lock()
	defer ownRequestsOfRun.Unlock()
	ownRequestsOfRun.all = append(ownRequestsOfRun.all, own)
	return own, nil
}

// settleOwnRequests records what the command sent to deprecated versions
// (usage.OwnRequests.Settle). A record that cannot be made only costs a
// later usage its "only this plugin's own": nothing is said of it. An
// interrupted command ends at once.
func settleOwnRequests(ctx context.Context, command string) {
	if ctx.Err() != nil {
		return
	}
	ownRequestsOfRun.Lock()
	all := ownRequestsOfRun.all
	ownRequestsOfRun.Unlock()
	for _, own := range all {
		own.SetCommand(command)
		_ = own.Settle(ctx)
	}
}

// ownRecords keeps the records of the plugin's own requests in kubectl's
// cache directory (--cache-dir), beside the sightings.
func ownRecords(flags *genericclioptions.ConfigFlags) usage.OwnRecords {
	if flags.CacheDir == nil || *flags.CacheDir == "" {
		return usage.OwnRecords{}
	}
	return usage.OwnRecords{Dir: filepath.Join(*flags.CacheDir, "crdversion", "requests")}
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
	c.own.Know(all)
	return cluster.Select(all, names, c.toMapper)
}

// noDiscovery stands in for discovery where there is no cluster (-f).
func noDiscovery() (meta.RESTMapper, error) {
	return nil, errors.New("no cluster: names are matched against the files' CRDs only")
}

// newSightings keeps what the plugin saw of storage switches in kubectl's
// cache directory (--cache-dir), beside its discovery cache.
func newSightings(flags *genericclioptions.ConfigFlags) *migration.Sightings {
	if flags.CacheDir == nil || *flags.CacheDir == "" {
		return migration.NewSightings("")
	}
	return migration.NewSightings(filepath.Join(*flags.CacheDir, "crdversion", "sightings"))
}
