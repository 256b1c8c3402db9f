package plugintest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Pod is what a pod of a ServiceAccount gives the plugin: the API server
// it reaches (KUBERNETES_SERVICE_HOST/PORT), the ServiceAccount's token,
// its namespace, and the container's environment.
type Pod struct {
	Server    string
	Token     string
	Namespace string
	Env       []string
}

// ErrNoMountNamespace: the machine gives no mount namespace to run in
// (neither root nor unprivileged user namespaces).
var ErrNoMountNamespace = fmt.Errorf("no mount namespace to put a pod's ServiceAccount directory in (root, or unprivileged user namespaces, needed)")

// InPod runs bin with args as a pod would: no kubeconfig, the pod's
// environment, and the token, the cluster's CA and the namespace in
// /var/run/secrets/kubernetes.io/serviceaccount, where rest.InClusterConfig
// reads them whatever the environment says, mounted in a mount namespace
// of the run's own (as root, or through a user namespace where the
// machine allows one). No kubelet is needed.
func InPod(ctx context.Context, bin string, pod Pod, args ...string) (Result, error) {
	server, err := url.Parse(pod.Server)
	if err != nil {
		return Result{}, err
	}
	ca, err := servingCA(server.Host)
	if err != nil {
		return Result{}, err
	}
	secrets, err := os.MkdirTemp("", "pod-secrets-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(secrets)
	for name, b := range map[string][]byte{"token": []byte(pod.Token), "ca.crt": ca, "namespace": []byte(pod.Namespace)} {
		if err := os.WriteFile(filepath.Join(secrets, name), b, 0o644); err != nil {
			return Result{}, err
		}
	}
	env := append([]string{"PATH=" + os.Getenv("PATH"), "KUBERNETES_SERVICE_HOST=" + server.Hostname(), "KUBERNETES_SERVICE_PORT=" + server.Port(), "SECRETS=" + secrets}, pod.Env...)
	const mountSecrets = `set -e
mount -t tmpfs tmpfs /var/run
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
cp "$SECRETS"/token "$SECRETS"/ca.crt "$SECRETS"/namespace /var/run/secrets/kubernetes.io/serviceaccount/
exec "$@"`
	var last Result
	for _, unshare := range [][]string{{"--mount", "--propagation", "private"}, {"--user", "--map-root-user", "--mount", "--propagation", "private"}} {
		cmd := exec.CommandContext(ctx, "unshare", append(append(unshare, "sh", "-c", mountSecrets, "sh", bin), args...)...)
		cmd.Env = env
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		last = Result{Stdout: out.String(), Stderr: errOut.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			last.Code = ee.ExitCode()
		} else if err != nil {
			return last, err
		}
		if !strings.Contains(last.Stderr, "unshare: ") && !strings.HasPrefix(last.Stderr, "mount: ") {
			return last, nil
		}
	}
	return last, fmt.Errorf("%w: %s", ErrNoMountNamespace, last.Stderr)
}

// servingCA is the CA of the certificate the API server serves to a client
// that names no server (a pod's: a kubeconfig's CA may be the loopback
// client's, chosen by its server name), as the cluster gives every pod in
// ca.crt: the last of the chain it sends.
func servingCA(hostPort string) ([]byte, error) {
	conn, err := tls.Dial("tcp", hostPort, &tls.Config{InsecureSkipVerify: true}) // reads the chain, trusts nothing
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	chain := conn.ConnectionState().PeerCertificates
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: chain[len(chain)-1].Raw}), nil
}
