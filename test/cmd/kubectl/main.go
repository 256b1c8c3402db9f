// Command kubectl is kubectl itself, built from k8s.io/kubectl's command
// package, for machines without one: the end-to-end tests need real plugin
// dispatch, and this is the code that does it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
