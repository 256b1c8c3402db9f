// Command crdversion-fullsandbox runs a real cluster control plane in one
// process: embedded etcd, kube-apiserver from k8s.io/kubernetes (RBAC,
// admission, priority and fairness, storagemigration.k8s.io) and
// kube-controller-manager with the garbage collector and the storage
// version migrator. Tests start it as a process; several may share one etcd.
// SANDBOX_VERBOSE=1 shows the control plane's own logs.
//
//	crdversion-fullsandbox serve [--empty] [--objects N]   # by hand: prints export KUBECONFIG=...
//	crdversion-fullsandbox serve --etcd URL --controller-manager=false
//	crdversion-fullsandbox controller-manager --kubeconfig FILE
//
// It is a development tool in a Go module of its own: the plugin's module
// never inherits k8s.io/kubernetes, and the plugin never links it. Build it
// without -trimpath: kube-apiserver's test server finds its certificates
// next to its source.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

const usage = `usage:
  crdversion-fullsandbox serve [--dir DIR] [--etcd URL] [--controller-manager=false] [--empty] [--objects N] [--kube-apiserver-arg=--flag=value ...]
  crdversion-fullsandbox controller-manager --kubeconfig FILE`

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "serve" && os.Args[1] != "controller-manager") {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	var o serveOptions
	fs.StringVar(&o.dir, "dir", "", "working directory (kubeconfig, etcd data); default a temp dir removed on exit")
	fs.StringVar(&o.etcd, "etcd", "", "use this etcd instead of starting one (another API server's)")
	fs.BoolVar(&o.controllerManager, "controller-manager", true, "also run kube-controller-manager (garbage collector and storage version migrator) once the example CRDs exist")
	fs.BoolVar(&o.empty, "empty", false, "install no example CRDs")
	fs.IntVar(&o.objects, "objects", 600, "how many example objects to create")
	fs.Func("kube-apiserver-arg", "an extra kube-apiserver flag, --name=value (repeatable)", func(v string) error {
		o.apiServerArgs = append(o.apiServerArgs, v)
		return nil
	})
	kubeconfig := fs.String("kubeconfig", "", "controller-manager: the cluster to run against")
	_ = fs.Parse(os.Args[2:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if mode == "serve" {
		err = serve(ctx, o)
	} else {
		err = runControllerManager(ctx, *kubeconfig)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

type serveOptions struct {
	dir, etcd         string
	apiServerArgs     []string
	controllerManager bool
	empty             bool
	objects           int
}

func serve(ctx context.Context, o serveOptions) error {
	start := time.Now()
	if o.dir == "" {
		dir, err := os.MkdirTemp("", "crdversion-fullsandbox-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.dir = dir
	}
	tb := &processTB{verbose: os.Getenv("SANDBOX_VERBOSE") != "", tmp: o.dir}
	defer tb.runCleanups()

	if o.etcd == "" {
		e, err := sandbox.StartEtcd(ctx, o.dir)
		if err != nil {
			return err
		}
		defer e.Stop()
		o.etcd = e.Endpoint()
	}
	config, stopAPI, err := startAPIServer(ctx, tb, o.etcd, o.apiServerArgs)
	if err != nil {
		return err
	}
	defer stopAPI()
	kubeconfig := filepath.Join(o.dir, "kubeconfig")
	if err := sandbox.WriteKubeconfig(kubeconfig, config); err != nil {
		return err
	}
	ready := time.Since(start)
	if !o.empty {
		clients, err := fixtures.NewClients(config)
		if err != nil {
			return err
		}
		if err := fixtures.InstallDemo(ctx, clients, o.objects); err != nil {
			return err
		}
	}
	cmErr := make(chan error, 1)
	if o.controllerManager {
		go func() { cmErr <- runControllerManager(ctx, kubeconfig) }()
	}
	fmt.Fprintf(os.Stderr, "fullsandbox: kube-apiserver ready in %s\n", ready.Round(time.Millisecond))
	// Tests read these two lines; people paste the first.
	fmt.Printf("export KUBECONFIG=%s\n", kubeconfig)
	fmt.Printf("# etcd %s\n", o.etcd)
	fmt.Fprintln(os.Stderr, "fullsandbox: running; press Ctrl-C to stop")
	select {
	case <-ctx.Done():
		return nil
	case err := <-cmErr:
		return fmt.Errorf("kube-controller-manager stopped: %w", err)
	}
}
