package auditlog

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// genClient is one client of a generated log.
type genClient struct{ user, agent, group, version, resource, verb string }

// genClients: a cluster's usual traffic around two clients of a custom
// resource: leases, pods and configmaps outnumber it.
var genClients = []genClient{
	{"system:kube-controller-manager", "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef/leader-election", "coordination.k8s.io", "v1", "leases", "update"},
	{"system:kube-scheduler", "kube-scheduler/v1.37.2 (linux/amd64) kubernetes/abcdef/leader-election", "coordination.k8s.io", "v1", "leases", "get"},
	{"system:node:node-1", "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef", "", "v1", "pods", "get"},
	{"system:node:node-2", "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef", "", "v1", "configmaps", "watch"},
	{"system:serviceaccount:kube-system:replicaset-controller", "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef/system:serviceaccount:kube-system:replicaset-controller", "", "v1", "pods", "list"},
	{"system:serviceaccount:monitoring:exporter", "exporter/v1.2.3 (linux/amd64) kubernetes/0a1b2c3", "example.com", "v1beta1", "widgets", "list"},
	{"system:serviceaccount:widgets-system:operator", "widget-operator/v2.0.0 (linux/amd64) kubernetes/4d5e6f7", "example.com", "v1", "widgets", "update"},
	{"system:node:node-3", "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef", "", "v1", "pods", "patch"},
}

// generate writes n events as kube-apiserver's log backend writes them at
// level Metadata without omitStages: each request twice, RequestReceived
// then ResponseComplete.
func generate(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	start := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for i := range n {
		c := genClients[(i/2)%len(genClients)]
		stage := "RequestReceived"
		if i%2 == 1 {
			stage = "ResponseComplete"
		}
		at := start.Add(time.Duration(i) * time.Millisecond).Format("2006-01-02T15:04:05.000000Z")
		uri := "/api/v1/namespaces/default/" + c.resource + "/x-" + strconv.Itoa(i%97)
		if c.group != "" {
			uri = "/apis/" + c.group + "/" + c.version + "/namespaces/default/" + c.resource + "/x-" + strconv.Itoa(i%97)
		}
		_, err := fmt.Fprintf(bw, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%08x-4f2a-4c1b-9e7d-%012x","stage":"%s","requestURI":"%s","verb":"%s","user":{"username":"%s","uid":"8c1e0f9a-0b7e-4b6b-9d1e-2f3a4b5c6d7e","groups":["system:serviceaccounts","system:authenticated"],"extra":{"authentication.kubernetes.io/credential-id":["JTI=0d9c2a"]}},"sourceIPs":["10.0.0.%d"],"userAgent":"%s","objectRef":{"resource":"%s","namespace":"default","name":"x-%d","apiGroup":"%s","apiVersion":"%s"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"system:controller\" of ClusterRole \"system:controller\" to User \"%s\""}}`+"\n",
			i/2, i, stage, uri, c.verb, c.user, i%250, c.agent, c.resource, i%97, c.group, c.version, at, at, c.user)
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

// TestWriteGeneratedLog writes the log docs/measured.md measures by hand:
// AUDITLOG_GENERATE=FILE AUDITLOG_EVENTS=N go test -run TestWriteGeneratedLog ./internal/auditlog
func TestWriteGeneratedLog(t *testing.T) {
	path := os.Getenv("AUDITLOG_GENERATE")
	if path == "" {
		t.Skip("AUDITLOG_GENERATE names no file to write")
	}
	n, err := strconv.Atoi(os.Getenv("AUDITLOG_EVENTS"))
	if err != nil {
		t.Fatalf("AUDITLOG_EVENTS: %v", err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := generate(f, n); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
