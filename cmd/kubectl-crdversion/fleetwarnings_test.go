package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// An API server's warning to one cluster of a fleet is printed once, led
// by that cluster's name, and the config's own wrap still applies.
func TestFleetWarningsNameTheirCluster(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Warning", `299 - "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"35","gitVersion":"v1.35.0"}`))
	}))
	defer srv.Close()

	var out bytes.Buffer
	var mu sync.Mutex
	wrapped := false
	own := func(c *rest.Config) *rest.Config { wrapped = true; return c }
	cfg := warningsTo(&linesLed{w: &out, mu: &mu, by: "prod-eu"}, own)(&rest.Config{Host: srv.URL})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := cs.Discovery().ServerVersion(); err != nil {
			t.Fatal(err)
		}
	}
	want := "prod-eu: Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget\n"
	if out.String() != want {
		t.Errorf("warnings printed %q, want %q once", out.String(), want)
	}
	if !wrapped {
		t.Error("the config's own wrap was dropped")
	}
}
