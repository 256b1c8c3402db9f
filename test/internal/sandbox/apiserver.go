package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	extensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
)

type apiServer struct {
	config *rest.Config
	cancel context.CancelFunc
	done   chan error
}

// identity is what a client knows of the API server: its address, serving
// certificate and token. A restarted server keeps it, as a restarted
// kube-apiserver does, so clients can ride the restart out.
type identity struct {
	port    int // 0 until the first start picks one
	certDir string
	token   string
}

func newIdentity(dir string) (*identity, error) {
	certDir, err := os.MkdirTemp(dir, "apiserver-")
	if err != nil {
		return nil, err
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	return &identity{certDir: certDir, token: hex.EncodeToString(token)}, nil
}

// sibling is the identity of another API server on the same etcd: a
// serving certificate of its own, as each server of an HA control plane
// has, but the same token, so one kubeconfig is good for all of them.
func (id *identity) sibling(dir string) (*identity, error) {
	certDir, err := os.MkdirTemp(dir, "apiserver-")
	if err != nil {
		return nil, err
	}
	return &identity{certDir: certDir, token: id.token}, nil
}

// clientConfig trusts the serving certificate, which the certificate
// directory keeps across restarts (the loopback certificate is new each time).
func (id *identity) clientConfig() (*rest.Config, error) {
	ca, err := os.ReadFile(filepath.Join(id.certDir, "apiserver.crt"))
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", id.port),
		BearerToken:     id.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
	}, nil
}

// startAPIServer runs apiextensions-apiserver against etcd, built from its
// own options as kube-apiserver would, minus what needs core APIs (there are
// none here: no namespaces, no services, no RBAC).
func startAPIServer(ctx context.Context, dir, etcdEndpoint string, id *identity, opts Options) (*apiServer, error) {
	// Authentication and authorization are delegated to a remote API server
	// in this server's design; pointing them at an address nobody serves
	// leaves the loopback token (system:masters) as the one way in.
	nowhere := filepath.Join(dir, "nowhere.kubeconfig")
	if err := writeNowhereKubeconfig(nowhere); err != nil {
		return nil, err
	}

	o := options.NewCustomResourceDefinitionsServerOptions(io.Discard, io.Discard)
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := compatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, err
	}
	if err := registry.Set(); err != nil {
		return nil, err
	}
	o.ServerRunOptions.ComponentGlobalsRegistry = registry

	ro := o.RecommendedOptions
	ro.Etcd.StorageConfig.Transport.ServerList = []string{etcdEndpoint}
	// kube-apiserver's layout (/registry/<group>/<resource>/...), not the
	// standalone server's default, so etcd keys look as on a real cluster.
	ro.Etcd.StorageConfig.Prefix = storagePrefix
	ro.Etcd.EnableWatchCache = !opts.DisableWatchCache
	ro.Etcd.WatchCacheSizes = opts.WatchCacheSizes
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", id.port))
	if err != nil {
		return nil, err
	}
	id.port = listener.Addr().(*net.TCPAddr).Port
	ro.SecureServing.Listener = listener
	ro.SecureServing.BindPort = id.port
	ro.SecureServing.ExternalAddress = net.ParseIP("127.0.0.1")
	ro.SecureServing.ServerCert.CertDirectory = id.certDir
	ro.Authentication.RemoteKubeConfigFile = nowhere
	ro.Authentication.SkipInClusterLookup = true
	ro.Authorization.RemoteKubeConfigFile = nowhere
	ro.CoreAPI.CoreAPIKubeconfigPath = nowhere
	ro.Admission.DisablePlugins = ro.Admission.RecommendedPluginOrder
	// Priority and fairness reads its configuration from core APIs.
	ro.Features.EnablePriorityAndFairness = false

	if err := o.Complete(); err != nil {
		listener.Close()
		return nil, err
	}
	if err := o.Validate(); err != nil {
		listener.Close()
		return nil, err
	}
	config, err := o.Config()
	if err != nil {
		listener.Close()
		return nil, err
	}
	// The loopback token is the clients' token: Complete authorizes
	// whatever it is, and a fixed one outlives a restart.
	config.GenericConfig.LoopbackClientConfig.BearerToken = id.token
	clientConfig, err := id.clientConfig() // Config wrote the certificate
	if err != nil {
		listener.Close()
		return nil, err
	}
	config.GenericConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(
		openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions),
		openapinamer.NewDefinitionNamer(extensionsapiserver.Scheme))
	completed := config.Complete()
	// Complete turns discovery off (kube-apiserver's aggregator serves it
	// there); without it kubectl cannot find any resource.
	completed.GenericConfig.EnableDiscovery = true
	// As in kube-apiserver: until every CRD is known, a request for one is
	// answered 503 (try again), not 404 (no such object), which a client
	// would take as the object gone.
	notFound := notfoundhandler.New(completed.GenericConfig.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey)
	server, err := completed.New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFound))
	if err != nil {
		listener.Close()
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s := &apiServer{config: clientConfig, cancel: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- server.GenericAPIServer.PrepareRun().RunWithContext(runCtx)
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls until the server is ready and serves the CRD API. The
// informer-sync check is left out: it waits on core informers that never
// sync, as there are no core APIs.
func (s *apiServer) waitReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(s.config)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-s.done:
			return false, fmt.Errorf("API server exited: %v", err)
		default:
		}
		for _, path := range []string{"/readyz?exclude=informer-sync", "/apis/apiextensions.k8s.io/v1"} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.config.Host+path, nil)
			resp, err := client.Do(req)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				last = fmt.Sprintf("%s: %d %s", path, resp.StatusCode, body)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("API server not ready: %w (last: %s)", err, last)
	}
	return nil
}

// stop shuts the server down and waits until it has released its port.
func (s *apiServer) stop() error {
	s.cancel()
	err, ok := <-s.done
	if ok && err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
