package stages

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Following status's advice step by step, as a person would, reaches the
// end from every state a release ships: one version left, nothing pending.
// Each command is planned as the plugin plans it; migrate is the cluster's
// part (every object re-stored, storedVersions pruned to storage).
func TestStatusAdviceReachesTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string // the commands followed, in order
	}{
		{name: "one old version", crd: crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"),
			want: "promote v1 bridge; promote v1 deprecated; migrate; promote v1 blocked; promote v1 removed"},
		{name: "two old versions, the older served without warning", crd: crd([]string{"v1alpha1", "v1beta1"}, "v1alpha1:served", "v1beta1:served,storage", "v1:served"),
			want: "migrate; promote v1 bridge; promote v1 deprecated; migrate; promote v1 blocked; promote v1 removed"},
		{name: "three old versions, one removed, two served", crd: crd([]string{"v1"}, "v1alpha1:served", "v1alpha2:served", "v1:served,storage"),
			want: "promote v1 deprecated; promote v1 blocked; promote v1 removed"},
		{name: "three old versions at three stages", crd: crd([]string{"v1"}, "v1alpha1:served", "v1alpha2:served,deprecated", "v1beta1:deprecated", "v1:served,storage"),
			want: "promote v1 deprecated; promote v1 blocked; promote v1 removed"},
		{name: "old versions unserved but stored (a chart between stop serving and remove)", crd: crd([]string{"v1alpha2", "v1alpha3", "v1beta1", "v1"}, "v1alpha2:-", "v1alpha3:-", "v1beta1:-", "v1:served,storage"),
			want: "migrate; promote v1 removed"},
		{name: "a switch by hand, never deprecated", crd: crd([]string{"v1beta1", "v1"}, "v1beta1:served", "v1:served,storage"),
			want: "migrate; promote v1 deprecated; promote v1 blocked; promote v1 removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.crd.DeepCopy()
			var followed []string
			for range 12 {
				a := Assess(c)
				if a.Next.Action == ActionNone {
					break
				}
				s := a.Next.Step
				if s == nil {
					t.Fatalf("after %q: %s advises %q with no command", followed, a.Next.Action, a.Next.Reason)
				}
				switch s.Op {
				case OpMigrate:
					c.Status.StoredVersions = []string{StorageVersion(c)}
					followed = append(followed, "migrate")
				case OpPromote:
					p, err := PlanPromote(c, s.Version, s.To, PromoteOptions{Verification: &Verification{From: StorageVersion(c)}})
					if err != nil {
						t.Fatalf("after %q: status advised promote %s --to %s (%s), and it was refused: %v", followed, s.Version, s.To, a.Next.Reason, err)
					}
					followed = append(followed, "promote "+s.Version+" "+string(p.To))
					c = p.After
					if !slices.Contains(c.Status.StoredVersions, StorageVersion(c)) {
						c.Status.StoredVersions = append(c.Status.StoredVersions, StorageVersion(c))
					}
				default:
					t.Fatalf("after %q: status advises %s", followed, s.Op)
				}
			}
			if got := strings.Join(followed, "; "); got != tc.want {
				t.Errorf("followed\n %s\nwant\n %s", got, tc.want)
			}
			if len(c.Spec.Versions) != 1 || Assess(c).Next.Action != ActionNone {
				t.Errorf("the advice ends with %d versions, next %+v", len(c.Spec.Versions), Assess(c).Next)
			}
		})
	}
}
