package sandbox

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig for config (the loopback token and CA,
// or no verification for a Balancer) that an external kubectl can use.
func WriteKubeconfig(path string, config *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sandbox"] = &clientcmdapi.Cluster{
		Server:                   config.Host,
		CertificateAuthorityData: config.CAData,
		TLSServerName:            config.ServerName,
		InsecureSkipTLSVerify:    config.Insecure,
	}
	kc.AuthInfos["sandbox"] = &clientcmdapi.AuthInfo{Token: config.BearerToken}
	kc.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "sandbox", Namespace: "default"}
	kc.CurrentContext = "sandbox"
	return clientcmd.WriteToFile(*kc, path)
}

// writeNowhereKubeconfig writes a kubeconfig pointing at a port nothing
// listens on, for the API server's delegated authn/authz and core API
// clients, which must be configured but are never meant to answer.
func writeNowhereKubeconfig(path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	kc.AuthInfos["nowhere"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "nowhere"}
	kc.CurrentContext = "nowhere"
	return clientcmd.WriteToFile(*kc, path)
}
