package controller_test

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	rbacv1 "k8s.io/api/rbac/v1"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Every documented combination of the chart's values, rendered by Helm's
// own library: the Job's arguments and image, and the ClusterRole's rules,
// no wider than the CRDs and groups named.
func TestChartValues(t *testing.T) {
	const repo = "ghcr.io/kubectl-crdversion/kubectl-crdversion"
	crdRules := func(names ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"patch"}, ResourceNames: names},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions/status"}, Verbs: []string{"update"}, ResourceNames: names},
		}
	}
	objects := func(groups []string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: []string{"get", "list", "update", "patch"}}
	}
	discovery := rbacv1.PolicyRule{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*"}, Verbs: []string{"get"}}
	rules := func(rs ...rbacv1.PolicyRule) []rbacv1.PolicyRule { return append(rs, discovery) }

	for _, tc := range []struct {
		name   string
		values map[string]any
		args   []string
		image  string
		rules  []rbacv1.PolicyRule
	}{
		{
			name:   "crds named, groups unset",
			values: map[string]any{"crds": []string{"widgets.example.com"}},
			args:   []string{"migrate", "widgets.example.com"},
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
		{
			name:   "crds of two groups, groups naming them",
			values: map[string]any{"crds": []string{"widgets.example.com", "certificates.pki.example.com", "gadgets.example.com"}, "groups": []string{"example.com", "pki.example.com"}},
			args:   []string{"migrate", "widgets.example.com", "certificates.pki.example.com", "gadgets.example.com"},
			rules: rules(append(crdRules("widgets.example.com", "certificates.pki.example.com", "gadgets.example.com"),
				objects([]string{"example.com"}, "widgets", "gadgets"), objects([]string{"pki.example.com"}, "certificates"))...),
		},
		{
			name:   "all within groups",
			values: map[string]any{"all": true, "groups": []string{"example.com", "pki.example.com"}},
			args:   []string{"migrate", "--all", "--group=example.com", "--group=pki.example.com"},
			rules:  rules(append(crdRules(), objects([]string{"example.com", "pki.example.com"}, "*"))...),
		},
		{
			name:   "a tag",
			values: map[string]any{"crds": []string{"widgets.example.com"}, "image": map[string]any{"tag": "v9.9.9"}},
			args:   []string{"migrate", "widgets.example.com"},
			image:  repo + ":v9.9.9",
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
		{
			name:   "a digest, over the tag",
			values: map[string]any{"crds": []string{"widgets.example.com"}, "image": map[string]any{"tag": "v9.9.9", "digest": testDigest}},
			args:   []string{"migrate", "widgets.example.com"},
			image:  repo + "@" + testDigest,
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
		{
			name:   "switchGrace 0, an integer",
			values: map[string]any{"crds": []string{"widgets.example.com"}, "switchGrace": 0},
			args:   []string{"migrate", "widgets.example.com", "--switch-grace=0s"},
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
		{
			name:   "switchGrace 90, seconds",
			values: map[string]any{"crds": []string{"widgets.example.com"}, "switchGrace": 90},
			args:   []string{"migrate", "widgets.example.com", "--switch-grace=90s"},
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
		{
			name:   "switchGrace a duration, and extraArgs",
			values: map[string]any{"crds": []string{"widgets.example.com"}, "switchGrace": "2m30s", "extraArgs": []string{"--gentle"}},
			args:   []string{"migrate", "widgets.example.com", "--switch-grace=2m30s", "--gentle"},
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
		{
			name:   `switchGrace "", the default`,
			values: map[string]any{"crds": []string{"widgets.example.com"}, "switchGrace": ""},
			args:   []string{"migrate", "widgets.example.com"},
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
		{
			name:   "the parent's condition and global values",
			values: map[string]any{"crds": []string{"widgets.example.com"}, "enabled": true, "global": map[string]any{"imageRegistry": "x"}},
			args:   []string{"migrate", "widgets.example.com"},
			rules:  rules(append(crdRules("widgets.example.com"), objects([]string{"example.com"}, "widgets"))...),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := decodeHooks(t, renderParent(t, tc.values))
			c := h.job.Spec.Template.Spec.Containers[0]
			if !slices.Equal(c.Args, tc.args) {
				t.Errorf("args %q, want %q", c.Args, tc.args)
			}
			// "": the chart's appVersion, a tag.
			if tc.image == "" && (!strings.HasPrefix(c.Image, repo+":v") || strings.Contains(c.Image, "@")) || tc.image != "" && c.Image != tc.image {
				t.Errorf("image %s, want %s", c.Image, cmp.Or(tc.image, repo+":<appVersion>"))
			}
			if got, want := h.role.Rules, tc.rules; !rulesEqual(got, want) {
				t.Errorf("rules:\n got %+v\nwant %+v", got, want)
			}
			for _, r := range h.role.Rules {
				for _, res := range r.Resources {
					if all, _ := tc.values["all"].(bool); res == "*" && !all || strings.HasPrefix(res, "*/") {
						t.Errorf("a rule covers subresources: %+v", r)
					}
				}
			}
		})
	}
}

func rulesEqual(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) && slices.Equal(x.Verbs, y.Verbs) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.NonResourceURLs, y.NonResourceURLs)
	})
}

// The same release name in two namespaces: the namespaced objects share
// a name, the cluster-wide ones do not (one upgrade's
// before-hook-creation would delete the other's role mid-run); long names
// are cut to 63 characters and stay apart.
func TestChartNamesPerNamespace(t *testing.T) {
	values := map[string]any{"crds": []string{"widgets.example.com"}}
	long := strings.Repeat("r", 53)
	type names struct{ sa, role, binding, job string }
	seen := map[string]string{}
	for _, rn := range [][2]string{
		{"operator", "team-a"}, {"operator", "team-b"},
		// "a-b" + "c" and "a" + "b-c" read alike.
		{"c", "a-b"}, {"b-c", "a"},
		{long, strings.Repeat("n", 63)}, {long, strings.Repeat("n", 62) + "m"},
	} {
		hs, err := renderAs(t, chartDir, rn[0], rn[1], values)
		if err != nil {
			t.Fatal(err)
		}
		h := decodeHooks(t, hs)
		n := names{h.sa.Name, h.role.Name, h.binding.Name, h.job.Name}
		for _, s := range []string{n.sa, n.role, n.binding, n.job} {
			if len(s) > 63 {
				t.Errorf("%s/%s: %q is longer than 63", rn[1], rn[0], s)
			}
		}
		if len(rn[1]) < 20 && !strings.Contains(n.role, rn[1]) {
			t.Errorf("%s/%s: the ClusterRole %q does not name the namespace", rn[1], rn[0], n.role)
		}
		if n.binding != n.role || h.binding.RoleRef.Name != n.role {
			t.Errorf("%s/%s: the binding %q refers to %q, the role is %q", rn[1], rn[0], n.binding, h.binding.RoleRef.Name, n.role)
		}
		if prev, ok := seen[n.role]; ok {
			t.Errorf("%s/%s and %s render one ClusterRole %q", rn[1], rn[0], prev, n.role)
		}
		seen[n.role] = rn[1] + "/" + rn[0]
	}
}

// What a template would drop or misread is refused before anything
// renders, by the schema or by the templates (the latter also under
// --skip-schema-validation).
func TestChartRefusesValues(t *testing.T) {
	named := func(kv ...any) map[string]any {
		v := map[string]any{"crds": []string{"widgets.example.com"}}
		for i := 0; i < len(kv); i += 2 {
			v[kv[i].(string)] = kv[i+1]
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"switchGrace a word", named("switchGrace", "soon"), "switchGrace"},
		{"switchGrace negative", named("switchGrace", -1), "switchGrace"},
		{"switchGrace a fraction", named("switchGrace", 1.5), "switchGrace"},
		{"switchGrace a boolean", named("switchGrace", true), "switchGrace"},
		{"an unknown key", named("switchgrace", "0s"), "switchgrace"},
		{"an unknown image key", named("image", map[string]any{"digests": testDigest}), "digests"},
		{"a digest with its repository", named("image", map[string]any{"digest": "ghcr.io/x@" + testDigest}), "digest"},
		{"a short digest", named("image", map[string]any{"digest": "sha256:0123"}), "digest"},
		{"a pull policy", named("image", map[string]any{"pullPolicy": "Sometimes"}), "pullPolicy"},
		{"timeoutSeconds a duration", named("hook", map[string]any{"timeoutSeconds": "15m"}), "timeoutSeconds"},
		{"a hook event", named("hook", map[string]any{"events": "post-upgrde"}), "events"},
		{"all a string", map[string]any{"all": "true", "groups": []string{"example.com"}}, "all"},
		{"a CRD by short name", named("crds", []string{"widgets"}), "crds"},
		{"groups *", map[string]any{"all": true, "groups": []string{"*"}}, "groups"},
		{"crds and all", named("all", true, "groups", []string{"example.com"}), "not both"},
		{"neither crds nor all", map[string]any{}, "set crds"},
		{"all without groups", map[string]any{"all": true}, "set groups"},
		{"crds outside groups", named("groups", []string{"pki.example.com"}), "which groups does not list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rendered: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// helm show readme prints the chart's README.
func TestChartReadme(t *testing.T) {
	out, err := action.NewShow(action.ShowReadme, &action.Configuration{}).Run(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"crdversion-migrate", "dependencies:", "switchGrace", "digest"} {
		if !strings.Contains(out, want) {
			t.Errorf("helm show readme lacks %q:\n%s", want, out)
		}
	}
}

// The chart the release publishes pins the image it pushed: the release
// job's script writes the digest into the chart's values before it
// packages it.
func TestChartPinnedByTheRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crdversion-migrate")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "chart-digest.sh"), dir, testDigest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	hs, err := renderAs(t, dir, "operator", "operator-system", map[string]any{"crds": []string{"widgets.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := decodeHooks(t, hs).job.Spec.Template.Spec.Containers[0].Image, "ghcr.io/kubectl-crdversion/kubectl-crdversion@"+testDigest; got != want {
		t.Errorf("the released chart runs %s, want %s", got, want)
	}
	// A digest that is not one is refused, and the chart is left as it was.
	if out, err := exec.Command("bash", filepath.Join("..", "..", "hack", "chart-digest.sh"), dir, "latest").CombinedOutput(); err == nil {
		t.Errorf("pinned %q:\n%s", "latest", out)
	}
}
