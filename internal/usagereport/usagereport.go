// Package usagereport judges what usage.Read found as the usage report:
// what REQUESTED can say of each version, and which need a person to look.
// It stands apart from usage so that the migration library, which reads
// usage, does not link the printers.
package usagereport

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/auditlog"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// From judges what usage.Read found.
func From(res *usage.Result) render.UsageReport {
	return FromAudit(res, nil)
}

// FromAudit judges what usage.Read found and the clients the audit log
// names (nil: no log given): a deprecated or unserved version that a client
// other than this plugin requested in the log needs attention.
func FromAudit(res *usage.Result, log *auditlog.Result) render.UsageReport {
	r := render.UsageReport{APIVersion: render.APIVersion, Kind: "UsageReport", Items: []render.UsageItem{}}
	if log != nil {
		read := log.Read
		r.AuditLog = &read
	}
	m := res.Metrics
	r.Metrics.Access = string(m.Access)
	r.Metrics.Message = metricsMessage(m)
	if !m.StartedAt.IsZero() {
		t := m.StartedAt
		r.Metrics.StartedAt = &t
	}
	for _, u := range res.CRDs {
		it := render.UsageItem{Name: u.CRD.Name, Group: u.CRD.Spec.Group, Resource: u.CRD.Spec.Names.Plural, ListedAt: u.Managers.ListedAt, Objects: u.Managers.Objects}
		names := make([]string, 0, len(u.CRD.Spec.Versions))
		for _, v := range u.CRD.Spec.Versions {
			names = append(names, v.Name)
		}
		stages.SortByPriority(names)
		for _, name := range names {
			v := versionUsage(u, name, m.Access)
			if log != nil {
				v.Clients, v.OwnClients = log.Clients(schema.GroupVersionResource{Group: u.CRD.Spec.Group, Version: name, Resource: u.CRD.Spec.Names.Plural})
				v.Attention = v.Attention || (v.Deprecated || !v.Served) && len(v.Clients) > 0
			}
			if v.Attention {
				r.Attention++
			}
			it.Versions = append(it.Versions, v)
		}
		r.Items = append(r.Items, it)
	}
	return r
}

func versionUsage(u usage.CRDUsage, name string, access usage.MetricsAccess) render.VersionUsage {
	out := render.VersionUsage{Name: name, Managers: []render.ManagerUsage{}}
	for _, v := range u.CRD.Spec.Versions {
		if v.Name == name {
			out.Served, out.Deprecated, out.Storage = v.Served, v.Deprecated, v.Storage
		}
	}
	req, seen := u.Requests[name]
	switch {
	case seen:
		// A series outlives the deprecation or the serving that set it.
		out.Requested, out.RemovedRelease = render.RequestedYes, req.RemovedRelease
		for _, s := range req.Subresources {
			out.RequestedResources = append(out.RequestedResources, strings.TrimSuffix(u.CRD.Spec.Names.Plural+"/"+s, "/"))
		}
		if own, ok := u.Own[name]; ok {
			out.OwnRequests = &render.OwnRequestsUsage{Commands: own.Commands, Requests: own.Requests, Last: own.Last, RequestsSince: own.Since}
		}
	case access != usage.MetricsRead:
		out.Requested, out.RequestedReason = render.RequestedUnknown, "/metrics not read"
	case !out.Served:
		out.Requested, out.RequestedReason = render.RequestedUnknown, "not served"
	case !out.Deprecated:
		out.Requested, out.RequestedReason = render.RequestedUnknown, "not deprecated"
	default:
		out.Requested = render.RequestedNo
	}
	for _, mu := range u.Managers.Managers {
		if mu.Version == name {
			out.Managers = append(out.Managers, render.ManagerUsage{Manager: mu.Manager, Operation: mu.Operation, Objects: mu.Objects})
		}
	}
	out.Attention = (out.Deprecated || !out.Served) && (out.RequestedByOthers() || len(out.Managers) > 0)
	return out
}

func metricsMessage(m *usage.DeprecatedAPIs) string {
	if why := m.Unreadable(); why != "" {
		return why + "; usage by request cannot be shown"
	}
	return ""
}
