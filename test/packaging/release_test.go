package packaging

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The release workflow runs on a version tag, builds with make dist for
// that tag (the archives, and plugins.yaml with their sums: make
// krew-manifest), publishes every archive and the manifest make dist
// writes, and only then asks krew-release-bot to update krew-index (the
// bot downloads the published archives to sum them).
func TestReleaseWorkflow(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Push struct {
				Tags []string `json:"tags"`
			} `json:"push"`
		} `json:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `json:"uses"`
				Run  string            `json:"run"`
				With map[string]string `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.On.Push.Tags) == 0 || !strings.HasPrefix(wf.On.Push.Tags[0], "v") {
		t.Errorf("the workflow does not run on version tags: %v", wf.On.Push.Tags)
	}
	job, ok := wf.Jobs["release"]
	if !ok {
		t.Fatalf("no release job: %v", wf.Jobs)
	}
	order := map[string]int{}
	for i, s := range job.Steps {
		switch {
		case strings.Contains(s.Run, "make dist"):
			order["dist"] = i
			if !strings.Contains(s.Run, `VERSION="${GITHUB_REF_NAME}"`) {
				t.Errorf("make dist does not take the version from the tag: %q", s.Run)
			}
		case strings.HasPrefix(s.Uses, "softprops/action-gh-release@"):
			order["publish"] = i
			files := strings.Fields(s.With["files"])
			for _, want := range []string{"dist/*.tar.gz", "dist/*.zip", "dist/checksums.txt", "dist/plugins.yaml"} {
				if !slices.Contains(files, want) {
					t.Errorf("the release does not publish %s: %v", want, files)
				}
			}
		case strings.HasPrefix(s.Uses, "rajatjindal/krew-release-bot@"):
			order["bot"] = i
		}
	}
	if len(order) != 3 || order["dist"] > order["publish"] || order["publish"] > order["bot"] {
		t.Errorf("want make dist, then the release, then krew-release-bot: steps at %v", order)
	}
}
