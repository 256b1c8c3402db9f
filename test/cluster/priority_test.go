package cluster

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// A FlowSchema puts the plugin's user in a priority level of one seat and a
// queue of one: the API server answers most of its requests 429. migrate
// backs off and completes with no failure. How much slower it is than the
// same migration unthrottled is logged, not asserted.
func TestMigrateUnderOneSeat(t *testing.T) {
	// An API server of its own: 50 seats in all, so a priority level of the
	// smallest share gets one.
	c := fullsandbox.StartT(t, fullsandbox.Options{APIServerArgs: []string{"--max-requests-inflight=40", "--max-mutating-requests-inflight=10"}})
	e := newEnv(t, c)
	const n = 300
	throttled := e.installWidgets("apf", n, true, "apf-a")
	free := e.installWidgets("apffree", n, true, "apffree-a")
	slow, _ := e.serviceAccount("apf-users", "slow")
	fast, _ := e.serviceAccount("apf-users", "fast")
	e.bindClusterRole("cluster-admin", "apf-users", "slow")
	e.bindClusterRole("cluster-admin", "apf-users", "fast")
	e.oneSeatFor("apf-users", "slow")

	start := time.Now()
	r := mustCode(t, e.pluginAs(slow, "migrate", throttled.name(), "--switch-grace=0s"), 0)
	slowTook := time.Since(start)
	contains(t, "migrate under one seat", r.Stdout, strconv.Itoa(n)+" re-stored", "0 failed", "(pruned)")
	if got, want := e.stored(throttled), map[string]int{throttled.group + "/v1": n}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	if rejected := e.metricSum("apiserver_flowcontrol_rejected_requests_total", `flow_schema="test-one-seat"`); rejected == 0 {
		t.Errorf("the API server rejected none of the plugin's requests: the test throttled nothing")
	} else {
		t.Logf("the API server answered 429 to %.0f requests", rejected)
	}

	start = time.Now()
	mustCode(t, e.pluginAs(fast, "migrate", free.name(), "--switch-grace=0s"), 0)
	fastTook := time.Since(start)
	t.Logf("%d objects: %s under one seat, %s unthrottled (%.1f× slower)", n, slowTook.Round(time.Millisecond), fastTook.Round(time.Millisecond), slowTook.Seconds()/fastTook.Seconds())
}

// oneSeatFor makes a priority level of the smallest share, that lends and
// borrows nothing and queues one request, and a FlowSchema that puts the
// ServiceAccount's every request in it; it waits until the API server
// serves the level.
func (e *env) oneSeatFor(namespace, sa string) {
	e.t.Helper()
	ctx := e.t.Context()
	fc := e.kube.FlowcontrolV1()
	_, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "test-one-seat"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 1},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "test-one-seat"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "test-one-seat"},
			MatchingPrecedence:         100,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: namespace, Name: sa}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return e.metricSum("apiserver_flowcontrol_nominal_limit_seats", `priority_level="test-one-seat"`) > 0, nil
	})
	if err != nil {
		e.t.Fatal("the API server did not take up the priority level within a minute")
	}
	e.t.Logf("test-one-seat: %.0f seat(s)", e.metricSum("apiserver_flowcontrol_nominal_limit_seats", `priority_level="test-one-seat"`))
}

// metricSum adds up the API server's samples of a metric whose labels
// include every one of labels.
func (e *env) metricSum(name string, labels ...string) float64 {
	e.t.Helper()
	sum, err := e.c.MetricSum(e.t.Context(), name, labels...)
	if err != nil {
		e.t.Fatal(err)
	}
	return sum
}
