package render

import "github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"

// The documents -o json and -o yaml print are pkg/report's, for programs that
// read them; this package writes them.
type (
	CheckReport      = report.CheckReport
	ConvertReport    = report.ConvertReport
	FleetReport      = report.FleetReport
	FleetItem        = report.FleetItem
	MigrateReport    = report.MigrateReport
	StatusItem       = report.StatusItem
	StatusReport     = report.StatusReport
	UpgradeReport    = report.UpgradeReport
	UsageReport      = report.UsageReport
	UsageMetrics     = report.UsageMetrics
	UsageItem        = report.UsageItem
	VersionUsage     = report.VersionUsage
	OwnRequestsUsage = report.OwnRequestsUsage
	ManagerUsage     = report.ManagerUsage
	Requested        = report.Requested
	VerifyReport     = report.VerifyReport
	Version          = report.Version
	ClusterRun       = report.ClusterRun
)

const (
	APIVersion       = report.APIVersion
	RequestedYes     = report.RequestedYes
	RequestedNo      = report.RequestedNo
	RequestedUnknown = report.RequestedUnknown
)
