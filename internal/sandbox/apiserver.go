package sandbox

import (
	"context"
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
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
)

type apiServer struct {
	config *rest.Config
	cancel context.CancelFunc
	done   chan error
}

// startAPIServer runs apiextensions-apiserver against etcd, built from its
// own options as kube-apiserver would, minus what needs core APIs (there are
// none here: no namespaces, no services, no RBAC).
func startAPIServer(ctx context.Context, dir, etcdEndpoint string, opts Options) (*apiServer, error) {
	certDir, err := os.MkdirTemp(dir, "apiserver-")
	if err != nil {
		return nil, err
	}
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
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ro.SecureServing.Listener = listener
	ro.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	ro.SecureServing.ExternalAddress = net.ParseIP("127.0.0.1")
	ro.SecureServing.ServerCert.CertDirectory = certDir
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
	config.GenericConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(
		openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions),
		openapinamer.NewDefinitionNamer(extensionsapiserver.Scheme))
	completed := config.Complete()
	// Complete turns discovery off (kube-apiserver's aggregator serves it
	// there); without it kubectl cannot find any resource.
	completed.GenericConfig.EnableDiscovery = true
	server, err := completed.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		listener.Close()
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s := &apiServer{config: rest.CopyConfig(server.GenericAPIServer.LoopbackClientConfig), cancel: cancel, done: make(chan error, 1)}
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
