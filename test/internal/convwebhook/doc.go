// Package convwebhook is a real HTTPS CRD conversion webhook for tests: the
// Kubernetes docs' example, v1 (and every version but v2) spec.hostPort
// ("host:port") ↔ v2 spec.host + spec.port, served on 127.0.0.1 with its own CA. It can be made lossy (v2 →
// v1 drops the port) or made to fail, to test what the plugin does then.
package convwebhook
