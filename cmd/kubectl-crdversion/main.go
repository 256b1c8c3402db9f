// Command kubectl-crdversion is the kubectl plugin that manages the lifecycle
// of CustomResourceDefinition versions: `kubectl crdversion ...`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientfeatures "k8s.io/client-go/features"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec, OIDC and cloud auth providers, as kubectl has them
)

func main() {
	// client-go logs the state of each of its feature gates at -v=1 the
	// first time one is read, ten lines kubectl never prints: read one
	// before -v is parsed, while klog still drops them.
	clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	// Ctrl-C cancels the context: a migration stops taking new objects,
	// lets writes in flight finish, prunes nothing and reports what it did.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := execute(withQuietCancel(ctx), NewCmdRoot(streams), streams)
	stop()
	os.Exit(code)
}
