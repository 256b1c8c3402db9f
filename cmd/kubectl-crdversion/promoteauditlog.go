package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// contextWord in an --audit-log path is the context's name: each cluster of
// a fleet has its own API servers, and so its own audit log.
const contextWord = "{context}"

// validateAuditLogs refuses --audit-log paths the gate could not read,
// before any cluster is asked.
func (o *PromoteOptions) validateAuditLogs() error {
	if len(o.AuditLogs) == 0 {
		return nil
	}
	if o.Filename != "" && !o.clusterNamed {
		return errors.New("--audit-log is read for the clients of a cluster: with -f, name it with --context or --kubeconfig")
	}
	for _, p := range o.AuditLogs {
		switch {
		case p == "-":
			return errors.New("--audit-log -: promote reads its audit logs from files (the gate may read them more than once); save the log to a file first")
		case len(o.fleet) > 0 && !strings.Contains(p, contextWord):
			return fmt.Errorf("--audit-log %s: each cluster of the fleet has an audit log of its own: put %s in the path, each cluster's context name (e.g. logs/%s/audit.log)", p, contextWord, contextWord)
		}
	}
	contexts := o.fleet
	if len(contexts) == 0 {
		contexts = []string{""}
		if c := o.configFlags.Context; c != nil {
			contexts[0] = *c
		}
	}
	for _, name := range contexts {
		for _, p := range o.AuditLogs {
			if strings.Contains(p, contextWord) && name == "" {
				return fmt.Errorf("--audit-log %s names %s, and no --context is given", p, contextWord)
			}
			if _, err := os.Stat(strings.ReplaceAll(p, contextWord, name)); err != nil {
				return fmt.Errorf("--audit-log: %w", err)
			}
		}
	}
	return nil
}

// auditLogs are the paths read for the cluster flags reach.
func (o *PromoteOptions) auditLogs(flags *genericclioptions.ConfigFlags) []string {
	name := ""
	if flags.Context != nil {
		name = *flags.Context
	}
	out := make([]string, len(o.AuditLogs))
	for i, p := range o.AuditLogs {
		out[i] = strings.ReplaceAll(p, contextWord, name)
	}
	return out
}

// auditLogArgs are the --audit-log flags of a printed command, for the
// cluster the refusal was met on.
func (o *PromoteOptions) auditLogArgs() string {
	var b strings.Builder
	for _, p := range o.auditLogs(o.configFlags) {
		b.WriteString(" --audit-log " + shellWord(p))
	}
	return b.String()
}

// auditLogRead says what the gate's read of the audit logs covered: a
// client that requests less often than that window may not be in it.
func (o *PromoteOptions) auditLogRead(read results.AuditLogRead, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", render.Printable(w))
	}
	if read.From == nil || read.To == nil {
		return
	}
	fmt.Fprintf(o.ErrOut, "audit log: %d events from %s to %s (%s), %d of them requests to the resource, read from %s\n",
		read.Events, read.From.UTC().Format(time.RFC3339), read.To.UTC().Format(time.RFC3339), read.To.Sub(*read.From).Round(time.Second),
		read.Requests, render.Printable(strings.Join(read.Files, ", ")))
}
