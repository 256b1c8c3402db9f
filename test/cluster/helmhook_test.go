package cluster

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

var hookManifest = filepath.Join("..", "..", "deploy", "helm", "post-upgrade-migrate.yaml")

// deploy/helm/post-upgrade-migrate.yaml as a chart installs it: its
// ServiceAccount bound to crdversion-migrate (deploy/rbac) and, once the
// upgrade switched the storage version, its Job's command run by the
// plugin binary with the in-cluster configuration a pod has (no kubeconfig:
// KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount's token and CA at
// /var/run/secrets/kubernetes.io/serviceaccount). No kubelet runs here, so
// the binary runs beside the cluster in a mount namespace of its own, where
// that directory holds what a pod's does.
func TestHelmHookRunsInCluster(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("hook", 10, true, "hook-a", "hook-b")
	hook := parseHook(t)
	e.applyRole("crdversion-migrate", w.group)
	if err := e.clients.EnsureNamespace(t.Context(), hook.job.Namespace); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(hookManifest)
	if err != nil {
		t.Fatal(err)
	}
	// The chart's edit: its CRD's name in the Job's arguments.
	edited := filepath.Join(t.TempDir(), "hook.yaml")
	if err := os.WriteFile(edited, bytes.ReplaceAll(b, []byte(`"widgets.example.com"`), []byte(`"`+w.name()+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.applyFile(edited)
	sa := hook.job.Spec.Template.Spec.ServiceAccountName
	e.waitBound(hook.job.Namespace, sa)
	job, err := e.kube.BatchV1().Jobs(hook.job.Namespace).Get(t.Context(), hook.job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	// The storage switch here is seconds old and nothing else writes: the
	// grace it would wait out is tested elsewhere.
	args := append(append([]string{}, c.Args...), "--switch-grace=0s")
	r := e.inPod(sa, hook.job.Namespace, c, args)
	mustCode(t, r, 0)
	contains(t, "the hook's migrate", r.Stdout, w.name(), "20 re-stored", "(pruned)")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 20}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
}

// hook is what the hook manifest declares.
type hook struct {
	sa      *corev1.ServiceAccount
	binding *rbacv1.ClusterRoleBinding
	job     *batchv1.Job
}

// parseHook decodes every document of the hook manifest strictly (a
// misspelt field fails) and checks that it is a post-upgrade hook whose
// parts fit together: the binding grants deploy/rbac's crdversion-migrate
// to the Job's ServiceAccount, created before the Job.
func parseHook(t *testing.T) hook {
	t.Helper()
	f, err := os.Open(hookManifest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	decode := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var h hook
	docs := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := docs.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decode.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", hookManifest, err)
		}
		meta := obj.(metav1.Object)
		if a := meta.GetAnnotations(); a["helm.sh/hook"] != "post-upgrade" || a["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
			t.Errorf("%s %s is not a post-upgrade hook deleted when it succeeds: %v", kindOf(obj), meta.GetName(), a)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			h.sa = o
		case *rbacv1.ClusterRoleBinding:
			h.binding = o
		case *batchv1.Job:
			h.job = o
		default:
			t.Errorf("%s: unexpected %s", hookManifest, kindOf(obj))
		}
	}
	if h.sa == nil || h.binding == nil || h.job == nil {
		t.Fatalf("%s: want a ServiceAccount, a ClusterRoleBinding and a Job, got %+v", hookManifest, h)
	}
	pod := h.job.Spec.Template.Spec
	if pod.ServiceAccountName != h.sa.Name || h.binding.RoleRef.Name != "crdversion-migrate" ||
		len(h.binding.Subjects) != 1 || h.binding.Subjects[0].Name != h.sa.Name || h.binding.Subjects[0].Namespace != h.sa.Namespace || h.job.Namespace != h.sa.Namespace {
		t.Errorf("the Job runs as %s/%s; the binding grants %s to %+v", h.job.Namespace, pod.ServiceAccountName, h.binding.RoleRef.Name, h.binding.Subjects)
	}
	if weight(t, h.sa) >= weight(t, h.job) || weight(t, h.binding) >= weight(t, h.job) {
		t.Errorf("the ServiceAccount (weight %d) and the binding (%d) must come before the Job (%d)", weight(t, h.sa), weight(t, h.binding), weight(t, h.job))
	}
	return h
}

// weight is the object's helm.sh/hook-weight: Helm creates the hooks of
// one event in its order.
func weight(t *testing.T, o metav1.Object) int {
	t.Helper()
	n, err := strconv.Atoi(o.GetAnnotations()["helm.sh/hook-weight"])
	if err != nil {
		t.Fatalf("%s: helm.sh/hook-weight: %v", o.GetName(), err)
	}
	return n
}

func kindOf(obj runtime.Object) string {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return "?"
	}
	return gvks[0].Kind
}

// servingCA is the CA of the certificate the API server serves to a client
// that names no server (a pod's: the kubeconfig's CA is the loopback
// client's, chosen by its server name), as the cluster gives every pod in
// ca.crt: the last of the chain it sends.
func servingCA(t *testing.T, hostPort string) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", hostPort, &tls.Config{InsecureSkipVerify: true}) // reads the chain, trusts nothing
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	chain := conn.ConnectionState().PeerCertificates
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: chain[len(chain)-1].Raw})
}

// inPod runs the plugin binary (the container's command, found on PATH)
// as a pod of the ServiceAccount would: no kubeconfig, the container's
// environment, KUBERNETES_SERVICE_HOST/PORT naming the API server, and
// the ServiceAccount's token and the cluster's CA in the directory every
// pod has them in, mounted in a mount namespace of the run's own (as root,
// or through a user namespace where the machine allows one).
func (e *env) inPod(sa, namespace string, c corev1.Container, args []string) plugintest.Result {
	e.t.Helper()
	bin, err := exec.LookPath(filepath.Base(c.Command[0]))
	if err != nil {
		e.t.Fatal(err)
	}
	tok, err := e.kube.CoreV1().ServiceAccounts(namespace).CreateToken(e.t.Context(), sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(e.c.Kubeconfig)
	if err != nil {
		e.t.Fatal(err)
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	server, err := url.Parse(cluster.Server)
	if err != nil {
		e.t.Fatal(err)
	}
	secrets := e.t.TempDir()
	for name, b := range map[string][]byte{"token": []byte(tok.Status.Token), "ca.crt": servingCA(e.t, server.Host), "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(secrets, name), b, 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "KUBERNETES_SERVICE_HOST=" + server.Hostname(), "KUBERNETES_SERVICE_PORT=" + server.Port(), "SECRETS=" + secrets}
	for _, v := range c.Env {
		if v.Name == "HOME" {
			// The pod's emptyDir.
			v.Value = e.t.TempDir()
		}
		env = append(env, v.Name+"="+v.Value)
	}
	// /var/run/secrets is where rest.InClusterConfig reads, whatever the
	// environment says: a tmpfs over /var/run, seen by this run only.
	const mountSecrets = `set -e
mount -t tmpfs tmpfs /var/run
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
cp "$SECRETS"/token "$SECRETS"/ca.crt "$SECRETS"/namespace /var/run/secrets/kubernetes.io/serviceaccount/
exec "$@"`
	var last plugintest.Result
	for _, unshare := range [][]string{{"--mount", "--propagation", "private"}, {"--user", "--map-root-user", "--mount", "--propagation", "private"}} {
		cmd := exec.CommandContext(e.t.Context(), "unshare", append(append(unshare, "sh", "-c", mountSecrets, "sh", bin), args...)...)
		cmd.Env = env
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		last = plugintest.Result{Stdout: out.String(), Stderr: errOut.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			last.Code = ee.ExitCode()
		} else if err != nil {
			e.t.Fatal(err)
		}
		if !strings.Contains(last.Stderr, "unshare: ") && !strings.HasPrefix(last.Stderr, "mount: ") {
			return last
		}
	}
	e.t.Skipf("no mount namespace to put a pod's ServiceAccount directory in (root, or unprivileged user namespaces, needed): %s", last.Stderr)
	return last
}
