package sandbox

import (
	"io"
	"os"

	"github.com/go-logr/logr"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

func verbose() bool { return os.Getenv("SANDBOX_VERBOSE") != "" }

func init() {
	// Several servers in one process (tests, restarts) would each try to
	// re-apply the global logging configuration; the API server refuses that
	// unless told to ignore unchanged settings.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	if !verbose() {
		// The API server logs every controller start and informer miss
		// (there are no core APIs here): noise for a test or demo.
		klog.SetLogger(logr.Discard())
		klog.SetOutput(io.Discard)
		klog.LogToStderr(false)
	}
}
