// Command crdversion-sandbox runs a real Kubernetes API server for CRDs
// (embedded etcd + apiextensions-apiserver) in one process, loaded with
// example CRDs and objects, so the plugin can be tried without a cluster.
//
//	crdversion-sandbox serve              # keep it running; prints export KUBECONFIG=...
//	crdversion-sandbox exec -- CMD ARGS   # run CMD with KUBECONFIG set, then stop
//
// It is a development tool: the plugin never links it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

const usage = `crdversion-sandbox runs a real Kubernetes API server for CRDs (embedded etcd
and apiextensions-apiserver) in this process, loaded with example CRDs and
objects, so kubectl crdversion can be tried without a cluster.

Usage:
  crdversion-sandbox serve [flags]              keep it running; prints the export KUBECONFIG=... line
  crdversion-sandbox exec [flags] -- CMD ARGS   run CMD with KUBECONFIG set, then stop; exits with CMD's code

Flags:
`

func main() {
	fs := flag.NewFlagSet("crdversion-sandbox", flag.ContinueOnError)
	objects := fs.Int("objects", 600, "how many example objects to create")
	empty := fs.Bool("empty", false, "install no example CRDs")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fs.SetOutput(os.Stdout)
		fs.Usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		os.Exit(0)
	}
	mode := os.Args[1]
	if mode != "serve" && mode != "exec" {
		fmt.Fprintf(os.Stderr, "error: unknown command %q: use serve or exec (crdversion-sandbox --help)\n", mode)
		os.Exit(2)
	}
	switch err := fs.Parse(os.Args[2:]); {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, mode, *objects, *empty, fs.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(ctx context.Context, mode string, objects int, empty bool, command []string) (int, error) {
	if mode == "exec" && len(command) == 0 {
		return 0, errors.New("exec needs a command after --")
	}
	start := time.Now()
	sb, err := sandbox.Start(ctx, sandbox.Options{})
	if err != nil {
		return 0, err
	}
	defer sb.Stop()
	ready := time.Since(start)

	if !empty {
		clients, err := fixtures.NewClients(sb.RestConfig())
		if err != nil {
			return 0, err
		}
		if err := fixtures.InstallDemo(ctx, clients, objects); err != nil {
			return 0, err
		}
	}
	fmt.Fprintf(os.Stderr, "sandbox: API server ready in %s; example CRDs and %d objects installed in %s\n",
		ready.Round(time.Millisecond), objects, time.Since(start).Round(time.Millisecond))

	if mode == "serve" {
		fmt.Printf("export KUBECONFIG=%s\n", sb.KubeconfigPath())
		fmt.Fprintln(os.Stderr, "sandbox: running; press Ctrl-C to stop")
		<-ctx.Done()
		return 0, nil
	}
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sb.KubeconfigPath())
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}
