// Command kubectl-crdversion is the kubectl plugin that manages the lifecycle
// of CustomResourceDefinition versions: `kubectl crdversion ...`.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec, OIDC and cloud auth providers, as kubectl has them
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(execute(NewCmdRoot(streams), streams))
}
