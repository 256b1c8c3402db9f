package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/fleet"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

// reachTimeout bounds the first read of each cluster of a fleet: a context
// that does not answer is a row of the table, never a hang. Past that read
// each command's own request timeouts and retry budgets hold.
const reachTimeout = 30 * time.Second

// reach reads the cluster's CRDs (one), within reachTimeout.
func reach(ctx context.Context, flags *genericclioptions.ConfigFlags) error {
	cfg, err := restConfig(flags)
	if err != nil {
		return err
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	_, err = cs.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// aimedRun is a command run on one cluster: flags aimed at it, its output
// to streams, its document (if -o asks for one) as JSON.
type aimedRun func(ctx context.Context, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, format render.Format) error

// runOnFleet runs run on each context, canary first (internal/fleet). Each
// cluster's stdout is kept apart and printed under its name once all are
// done; its stderr lines lead with its name. Then a row per cluster, or,
// where -o asks for a document, one FleetReport holding each cluster's
// own. Exit 0 only when every cluster is done.
func runOnFleet(ctx context.Context, streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags, f fleetFlags, contexts []string, format render.Format, run aimedRun) error {
	own := format
	if format.Document() {
		own = render.FormatJSON
	}
	var mu sync.Mutex // stderr, one line at a time
	rows := fleet.Run(ctx, contexts, f.Parallel, func(ctx context.Context, name string) ([]byte, fleet.State, string) {
		errOut := &linesLed{w: streams.ErrOut, mu: &mu, by: name}
		aimed := inContext(flags, name)
		aimed.WrapConfigFn = warningsTo(errOut, flags.WrapConfigFn)
		if err := reach(ctx, aimed); err != nil {
			if ctx.Err() != nil {
				return nil, fleet.Failed, "interrupted before it was reached"
			}
			return nil, fleet.Failed, "unreachable: " + render.ErrorMessage(err)
		}
		var out bytes.Buffer
		err := run(ctx, aimed, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: errOut}, own)
		errOut.flush()
		st, why := stateOf(err)
		return out.Bytes(), st, why
	})
	runs := make([]render.ClusterRun, len(rows))
	outputs := make([][]byte, len(rows))
	for i, r := range rows {
		runs[i] = render.ClusterRun{Cluster: r.Context, Result: string(r.State), Why: r.Why, Duration: r.Took}
		outputs[i] = r.Value
	}
	if err := render.WriteFleet(streams.Out, format, runs, outputs); err != nil {
		return err
	}
	if !fleet.AllDone(rows) {
		return errAttention
	}
	return nil
}

// warningsTo makes the API server's warnings to a cluster's clients go to
// w, led by its name as its other lines are, and not to the process-wide
// handler that names no cluster.
func warningsTo(w io.Writer, wrap func(*rest.Config) *rest.Config) func(*rest.Config) *rest.Config {
	handler := rest.NewWarningWriter(w, rest.WarningWriterOptions{Deduplicate: true})
	return func(c *rest.Config) *rest.Config {
		if wrap != nil {
			c = wrap(c)
		}
		c.WarningHandler = handler
		return c
	}
}

// stateOf is where a cluster's run ended, by the error that ended it.
func stateOf(err error) (fleet.State, string) {
	switch {
	case err == nil:
		return fleet.Done, ""
	case errors.Is(err, errAttention):
		return fleet.Attention, "needs attention: see its report above"
	case errors.As(err, new(attentionError)):
		return fleet.Attention, oneLine(err)
	}
	return fleet.Failed, oneLine(err)
}

// oneLine is an error as execute prints it, on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(withAdvice(render.ErrorMessage(err), err)), " ")
}

// linesLed writes whole lines to w, each led by a cluster's name.
type linesLed struct {
	w       io.Writer
	mu      *sync.Mutex
	by      string
	partial []byte
}

func (l *linesLed) Write(b []byte) (int, error) {
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		l.line(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
}

func (l *linesLed) line(b []byte) {
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s: %s\n", l.by, b)
}

// flush writes a last line that had no line break.
func (l *linesLed) flush() {
	l.line(l.partial)
	l.partial = nil
}
