// Package fullsandbox starts the full control plane of test/full (etcd,
// kube-apiserver, kube-controller-manager from k8s.io/kubernetes) as
// processes, for tests of what only a real cluster has: RBAC, admission,
// priority and fairness, several API servers, the in-tree storage version
// migrator. It lives in a module of its own; tests reach it through its
// binary, so this module never requires k8s.io/kubernetes.
package fullsandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// EnvBinary names a prebuilt crdversion-fullsandbox (make test builds it
// before the tests, so a cold build of k8s.io/kubernetes does not count
// against a test timeout).
const EnvBinary = "CRDVERSION_FULLSANDBOX"

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary returns the full sandbox's binary, building it once per process
// when EnvBinary does not name one.
func Binary() (string, error) {
	buildOnce.Do(func() {
		if p := os.Getenv(EnvBinary); p != "" {
			binary = p
			return
		}
		_, self, _, _ := runtime.Caller(0)
		module := filepath.Join(filepath.Dir(self), "..", "..", "full")
		dir, err := os.MkdirTemp("", "crdversion-fullsandbox-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "crdversion-fullsandbox")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/crdversion-fullsandbox")
		cmd.Dir = module
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the full sandbox: %v\n%s", err, out)
		}
	})
	return binary, buildErr
}

// Cluster is one kube-apiserver process (with etcd, unless it shares
// another's).
type Cluster struct {
	// Kubeconfig holds the API server's loopback (system:masters) identity.
	Kubeconfig string
	// EtcdEndpoint is the etcd this API server stores in.
	EtcdEndpoint string
	// Store reads etcd: the ground truth of what is stored.
	sandbox.Store
	proc *process
}

// Options tune a cluster.
type Options struct {
	// Etcd makes the API server share another cluster's etcd.
	Etcd string
	// APIServerArgs are extra kube-apiserver flags (--name=value).
	APIServerArgs []string
}

// Start starts an empty cluster without a controller manager and stops it
// when the test (or TestMain's cleanup) ends.
func Start(opts Options) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "crdversion-fullsandbox-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--empty", "--controller-manager=false", "--dir", dir}
	if opts.Etcd != "" {
		args = append(args, "--etcd", opts.Etcd)
	}
	for _, a := range opts.APIServerArgs {
		args = append(args, "--kube-apiserver-arg="+a)
	}
	p, lines, err := startProcess(bin, args, 2, 3*time.Minute)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.dir = dir
	c := &Cluster{
		Kubeconfig:   strings.TrimPrefix(lines[0], "export KUBECONFIG="),
		EtcdEndpoint: strings.TrimPrefix(lines[1], "# etcd "),
		proc:         p,
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{c.EtcdEndpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		p.stop()
		return nil, err
	}
	c.Store = sandbox.Store{Client: etcd}
	return c, nil
}

// StartT starts a cluster for one test.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// RestConfig is the admin client config; QPS and Burst are the caller's.
func (c *Cluster) RestConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
}

// PID is the process of the API server (and its etcd, if it started one).
func (c *Cluster) PID() int { return c.proc.cmd.Process.Pid }

// Stop stops the API server (and its etcd, if it started one).
func (c *Cluster) Stop() error {
	_ = c.Store.Client.Close()
	return c.proc.stop()
}

// StartControllerManager runs kube-controller-manager (garbage collector
// and storage version migrator) against the cluster until the test ends.
// Start it after the test's CRDs exist: its garbage collector discovers
// resources only every 30 seconds.
func (c *Cluster) StartControllerManager(t testing.TB) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := startProcess(bin, []string{"controller-manager", "--kubeconfig", c.Kubeconfig}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	})
}

type process struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
	dir    string
}

// startProcess starts bin and waits for its first n lines on stdout.
func startProcess(bin string, args []string, n int, timeout time.Duration) (*process, []string, error) {
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	p := &process{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	got := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stdout)
		for len(lines) < n && sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
		_, _ = io.Copy(io.Discard, stdout)
		p.done <- cmd.Wait()
	}()
	if n == 0 {
		return p, nil, nil
	}
	select {
	case lines := <-got:
		if len(lines) == n {
			return p, lines, nil
		}
		err = fmt.Errorf("%s %s exited before it was ready", filepath.Base(bin), args[0])
	case <-time.After(timeout):
		err = fmt.Errorf("%s %s not ready after %s", filepath.Base(bin), args[0], timeout)
	}
	_ = p.stop()
	return nil, nil, fmt.Errorf("%w\n%s", err, p.stderrText())
}

// stop asks the process to end (SIGTERM) and kills it if it has not within
// 30 seconds.
func (p *process) stop() error {
	defer func() {
		if p.dir != "" {
			os.RemoveAll(p.dir)
		}
	}()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 30s of SIGTERM; killed\n%s", filepath.Base(p.cmd.Path), p.stderrText())
	}
}

func (p *process) stderrText() string {
	w := p.cmd.Stderr.(*lockedWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.stderr.String()
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
