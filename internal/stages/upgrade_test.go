package stages

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ways spells a plan's steps as phase:op[:version][:to][+flags], or phase:text for the owner's.
func ways(u Upgrade) string {
	var out []string
	for _, w := range u.Steps {
		s := string(w.Phase) + ":"
		switch {
		case w.Step == nil:
			s += "-"
		default:
			s += string(w.Step.Op)
			for _, part := range []string{w.Step.Version, string(w.Step.To)} {
				if part != "" {
					s += ":" + part
				}
			}
			if w.Step.FromFile != "" {
				s += "+file"
			}
			if w.Step.SwitchStorage {
				s += "+switch"
			}
			if w.Step.CleanManagedFields {
				s += "+clean"
			}
			if len(w.Step.CleanVersions) > 0 {
				s += ":" + strings.Join(w.Step.CleanVersions, ",")
			}
			if w.Step.AcceptLoss {
				s += "+acceptloss"
			}
		}
		if w.Decide {
			s += "?"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestPlanUpgrade(t *testing.T) {
	apply := Advise(nil, "kubectl apply --server-side -f new.yaml")
	refused := func(storage string, gen int64) map[string]string {
		r := Refused{Storage: storage, Generation: gen, Objects: 2, First: []string{"a/b", "a/c"}, Fields: []string{"spec.legacy"}, At: time.Unix(0, 0)}
		return map[string]string{RefusedAnnotation: r.Annotation()}
	}
	switchBack := func(storage, to string, gen int64, accepted bool) map[string]string {
		r := Refused{Storage: storage, Generation: gen, Objects: 2, First: []string{"a/b", "a/c"}, Fields: []string{"spec.proxyProtocol"}, At: time.Unix(0, 0), To: to, Accepted: accepted}
		return map[string]string{SwitchBackAnnotation: r.Annotation()}
	}
	const linkerd = "v1beta1,v1beta2,v1beta3|v1beta1:served,v1beta2:served,v1beta3:served,storage"
	const linkerdHop2 = "v1beta1,v1beta2,v1beta3|v1beta1:served,v1beta2:served,storage,v1beta3:served"
	const linkerdDone = "v1beta1,v1beta2,v1beta3|v1beta1:served,storage,v1beta2:served,v1beta3:served"
	for _, tc := range []struct {
		name       string
		live, next string // stored|versions...
		entries    []string
		annotate   map[string]string
		want       string
		done       bool
		next0      Action
	}{
		{name: "not on the cluster: the apply creates it", next: "|v1:served,storage", want: "apply:-", next0: ActionReady},
		{name: "applied and clean", live: "v1|v1:served,storage", next: "|v1:served,storage", done: true, next0: ActionNone},
		{name: "applied, objects still at the old storage: re-stored after", live: "v1beta1,v1|v1beta1:served,v1:served,storage", next: "|v1beta1:served,v1:served,storage", want: "after:migrate", next0: ActionRun},
		{name: "applied, entries of a removed version left", live: "v1|v1:served,storage", next: "|v1:served,storage", entries: []string{"v1alpha1"}, want: "after:migrate+clean"},
		{name: "a new version beside storage: only the apply", live: "v1beta1|v1beta1:served,storage", next: "|v1beta1:served,storage,v1:served", want: "apply:-"},
		{name: "the apply switches storage to a version it keeps both of: re-store after", live: "v1beta1|v1beta1:served,storage,v1:served", next: "|v1beta1:served,v1:served,storage", want: "apply:- after:migrate"},
		{name: "a stored version removed: re-store and prune first", live: "v1alpha1,v1|v1alpha1:served,v1:served,storage", next: "|v1:served,storage", want: "before:migrate apply:-"},
		{name: "Knative: a served version removed with entries: re-stored, entries moved while served, then apply",
			live: "v1alpha1,v1beta1|v1alpha1:served,v1beta1:served,storage", next: "|v1beta1:served,storage", entries: []string{"v1alpha1"},
			want: "before:migrate before:migrate+clean:v1alpha1 apply:-"},
		{name: "entries at an unserved version the release removes: cleaned while listed",
			live: "v1|v1alpha1:-,v1:served,storage", next: "|v1:served,storage", entries: []string{"v1alpha1"}, want: "before:migrate+clean apply:-"},
		{name: "entries at a served version the release keeps others beside: cleaned right after",
			live: "v1|v1alpha1:served,v1alpha2:served,v1:served,storage", next: "|v1alpha2:served,v1:served,storage", entries: []string{"v1alpha1"}, want: "before:migrate+clean:v1alpha1 apply:-"},
		{name: "Kueue: the release drops today's storage, a version the cluster lacks takes over",
			live: "v1alpha1|v1alpha1:served,storage", next: "|v1beta1:served,storage",
			want: "before:promote:v1beta1+file before:promote:v1beta1:bridge before:promote:v1beta1:deprecated before:migrate apply:-"},
		{name: "the release drops today's storage, a served newer one takes over",
			live: "v1alpha1|v1alpha1:served,storage,v1beta1:served", next: "|v1beta1:served,storage",
			want: "before:promote:v1beta1:bridge before:promote:v1beta1:deprecated before:migrate apply:-"},
		{name: "Crossplane downgrade: one switch back, re-store, apply",
			live: "v1beta1,v1|v1beta1:served,v1:served,storage", next: "|v1beta1:served,storage", want: "before:rollback:v1+switch before:migrate apply:-"},
		{name: "a downgrade whose objects carry entries at the version it removes: moved before the apply, still served",
			live: "v1beta1,v1|v1beta1:served,v1:served,storage", next: "|v1beta1:served,storage", entries: []string{"v1"},
			want: "before:rollback:v1+switch before:migrate before:migrate+clean:v1 apply:-"},
		{name: "a downgrade to a version no longer served: served again, switched back",
			live: "v1beta1,v1|v1beta1:-,v1:served,storage", next: "|v1beta1:served,storage", want: "before:rollback:v1 before:rollback:v1+switch before:migrate apply:-"},
		{name: "Linkerd: two versions back, one switch at a time",
			live: "v1beta1,v1beta2,v1beta3|v1beta1:served,v1beta2:served,v1beta3:served,storage", next: "|v1alpha1:served,v1beta1:served,storage",
			want: "before:rollback:v1beta3+switch before:rollback:v1beta2+switch before:migrate apply:-"},
		{name: "a refused migrate: its ways on, never the same migrate",
			live: "v1alpha1,v1|v1alpha1:served,v1:served,storage", next: "|v1:served,storage", annotate: refused("v1", 3),
			want: "before:-? before:migrate+acceptloss? before:rollback:v1+switch? apply:-", next0: ActionFix},
		{name: "a refused record of another generation is a hint no longer",
			live: "v1alpha1,v1|v1alpha1:served,v1:served,storage", next: "|v1:served,storage", annotate: refused("v1", 2), want: "before:migrate apply:-"},
		{name: "applied, a refused migrate after it: the ways on",
			live: "v1beta1,v1|v1beta1:served,v1:served,storage", next: "|v1beta1:served,v1:served,storage", annotate: refused("v1", 3),
			want: "after:-? after:migrate+acceptloss? after:rollback:v1+switch?"},
		{name: "a switch back undone for a loss: its ways on, never the same switch back",
			live: linkerd, next: "|v1beta1:served,storage", annotate: switchBack("v1beta3", "v1beta2", 3, false),
			want: "before:-? before:rollback:v1beta3+switch+acceptloss? before:-? apply:-", next0: ActionFix},
		{name: "the second switch back undone for a loss: the ways on from there",
			live: linkerdHop2, next: "|v1beta1:served,storage", annotate: switchBack("v1beta2", "v1beta1", 3, false),
			want: "before:-? before:rollback:v1beta2+switch+acceptloss? before:-? apply:-", next0: ActionFix},
		{name: "a switch back refused on another generation (the schema changed since): switched back again",
			live: linkerd, next: "|v1beta1:served,storage", annotate: switchBack("v1beta3", "v1beta2", 2, false),
			want: "before:rollback:v1beta3+switch before:rollback:v1beta2+switch before:migrate apply:-"},
		{name: "a switch back refused to another version: not this hop's",
			live: linkerd, next: "|v1beta1:served,storage", annotate: switchBack("v1beta3", "v1beta1", 3, false),
			want: "before:rollback:v1beta3+switch before:rollback:v1beta2+switch before:migrate apply:-"},
		{name: "the loss accepted at the switch back: the re-store takes it, not asked twice",
			live: linkerdDone, next: "|v1beta1:served,storage", annotate: switchBack("v1beta1", "v1beta1", 3, true),
			want: "before:migrate+acceptloss apply:-", next0: ActionRun},
		{name: "an accepted loss of another generation says nothing of the re-store",
			live: linkerdDone, next: "|v1beta1:served,storage", annotate: switchBack("v1beta1", "v1beta1", 2, true),
			want: "before:migrate apply:-"},
		{name: "an accepted loss with switches back still to take: each checked",
			live: linkerdHop2, next: "|v1beta1:served,storage", annotate: switchBack("v1beta2", "v1beta2", 3, true),
			want: "before:rollback:v1beta2+switch before:migrate apply:-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(s string) *apiextensionsv1.CustomResourceDefinition {
				if s == "" {
					return nil
				}
				stored, specs, _ := strings.Cut(s, "|")
				var st []string
				if stored != "" {
					st = strings.Split(stored, ",")
				}
				var vs []string
				for _, v := range strings.Split(specs, ",") {
					if strings.HasPrefix(v, "v") && strings.Contains(v, ":") {
						vs = append(vs, v)
					} else {
						vs[len(vs)-1] += "," + v
					}
				}
				return crd(st, vs...)
			}
			next := build(tc.next)
			var u Upgrade
			if l := build(tc.live); l != nil {
				l.Annotations = tc.annotate
				u = PlanUpgrade(l, next, UpgradeFacts{Entries: tc.entries, Apply: apply})
			} else {
				u = PlanUpgrade(nil, next, UpgradeFacts{Apply: apply})
			}
			if got := ways(u); got != tc.want || u.Done != tc.done {
				t.Errorf("plan = %q (done %v), want %q (done %v)\n%s", got, u.Done, tc.want, tc.done, fmt.Sprint(u.Steps))
			}
			if tc.next0 != "" && u.Next().Action != tc.next0 {
				t.Errorf("next = %+v, want action %s", u.Next(), tc.next0)
			}
		})
	}
}
