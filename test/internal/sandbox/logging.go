package sandbox

import (
	"io"
	"os"
	_ "unsafe" // go:linkname, below

	"github.com/go-logr/logr"
	"go.uber.org/zap"
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
		// The API server's etcd client logs every cancelled request as
		// JSON straight to stderr, and ETCD_CLIENT_DEBUG cannot lower it:
		// its logger is a package variable, set in that package's init
		// (which has run by now: this package imports it).
		etcdClientLogger = zap.NewNop()
	}
}

//go:linkname etcdClientLogger k8s.io/apiserver/pkg/storage/storagebackend/factory.etcd3ClientLogger
var etcdClientLogger *zap.Logger
