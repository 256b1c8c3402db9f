// Package sandbox runs a real Kubernetes API server for CRDs in-process: an
// embedded etcd plus k8s.io/apiextensions-apiserver, the code kube-apiserver
// itself serves CRDs with. Tests and the demo use it; the plugin never links
// it. etcd is reachable directly, so tests can check the apiVersion each
// object is stored at — the ground truth of a storage migration.
//
// # HA control planes and a late API server
//
// AddAPIServer starts more API servers on the sandbox's etcd, each with an
// address and serving certificate of its own and the main server's token, as
// the servers of an HA control plane; a Balancer sends each new connection to
// the next of them. A Proxy (TerminateTLS) is an L7 balancer instead: it
// ends TLS with a certificate of its own and sends each request to the next
// server, so that nothing a client receives tells the servers apart. A
// server added Late reaches etcd through a WatchHold, a gRPC proxy that
// forwards every request at once but, while held, queues what
// the CRD watch (keys under /registry/apiextensions.k8s.io/
// customresourcedefinitions/) delivers, and delivers it in order on Release.
// That is how a real server falls behind: its CRD handler follows CRDs
// through its own etcd watch. Only that watch is held, so the server's CRD
// handler, discovery, CRD informer and controllers see the CRDs as they
// were, while its reads, writes and watches of objects reach etcd at once:
// it stores new objects at the storage version it last saw. A GET of a CRD
// through it reads etcd and is current; a LIST waits up to 3s for its held
// watch cache, then reads etcd. Progress notifications for the CRD watch's
// whole stream are held too, as etcd orders them behind its events. Not
// modelled: lagging object watches, stale reads (etcd is one member, every
// read is linearizable), and realistic timing: a hold lasts until Release.
package sandbox
