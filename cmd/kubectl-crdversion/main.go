// Command kubectl-crdversion is the kubectl plugin that manages the lifecycle
// of CustomResourceDefinition versions: `kubectl crdversion ...`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec, OIDC and cloud auth providers, as kubectl has them
)

func main() {
	// Ctrl-C cancels the context: a migration stops taking new objects,
	// lets writes in flight finish, prunes nothing and reports what it did.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := execute(ctx, NewCmdRoot(streams), streams)
	stop()
	os.Exit(code)
}
