package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// offline runs `kubectl crdversion ARGS` with no cluster at all.
func offline(t *testing.T, args ...string) result {
	t.Helper()
	return offlineIn(t, "", args...)
}

// offlineIn is offline with stdin as the standard input.
func offlineIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return offlineRun(t, stdin, "kubectl", append([]string{"crdversion"}, args...)...)
}

// offlineRun runs a command line with no cluster at all.
func offlineRun(t *testing.T, stdin, name string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOfflineManifestLifecycle(t *testing.T) {
	original, err := os.ReadFile("../../hack/demo/clusterpolicies-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "crds.yaml")
	// Another document after the CRD must come through untouched.
	content := string(original) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other # untouched\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}

	st := offline(t, "status", "-f", dir).mustCode(t, 0)
	contains(t, "status -f", st.stdout, "clusterpolicies.policy.example.com", "introduced")

	dry := offline(t, "promote", "-f", file, "v2", "--dry-run=client").mustCode(t, 0)
	contains(t, "offline dry run", dry.stdout, "v2 introduced → deprecated (dry run: file unchanged)", "run this there: kubectl crdversion promote clusterpolicies.policy.example.com v2 --to bridge")
	if now, _ := os.ReadFile(file); string(now) != content {
		t.Fatal("--dry-run=client changed the file")
	}
	oneError(t, offline(t, "promote", "-f", file, "v2", "--dry-run=server").mustCode(t, 1), "--dry-run=server needs a cluster")

	r := offline(t, "promote", "-f", file, "v2").mustCode(t, 0)
	contains(t, "offline promote", r.stdout, "written to "+file,
		"kubebuilder markers for the same result:", "v2 types: add // +kubebuilder:storageversion",
		`v1 types: add // +kubebuilder:deprecatedversion:warning="policy.example.com/v1 ClusterPolicy is deprecated; use policy.example.com/v2 ClusterPolicy"`)
	changed, _ := os.ReadFile(file)
	for _, keep := range []string{"# The ClusterPolicy CRD as its next release ships it", "  # v2: same fields, stricter enforcement", "  name: other # untouched"} {
		if !strings.Contains(string(changed), keep) {
			t.Errorf("the edit lost %q", keep)
		}
	}
	contains(t, "file after promote", offline(t, "status", "-f", file).stdout, "deprecated")

	offline(t, "rollback", "-f", file).mustCode(t, 0)
	if back, _ := os.ReadFile(file); string(back) != content {
		t.Errorf("rollback did not restore the file:\n%s", back)
	}
}

// -f reads like kubectl's: stdin, and files promote -f cannot edit line by
// line (JSON, CRLF, flow style) refused before they are touched.
func TestOfflineInputHabits(t *testing.T) {
	original, err := os.ReadFile("../../hack/demo/clusterpolicies-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := offlineIn(t, string(original), "status", "-f", "-").mustCode(t, 0)
	contains(t, "status -f -", st.stdout, "clusterpolicies.policy.example.com")

	dir := t.TempDir()
	for name, content := range map[string]string{
		"crd.json":  `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gizmos.example.com"},"spec":{"group":"example.com","names":{"kind":"Gizmo","plural":"gizmos"},"scope":"Namespaced","versions":[{"name":"v1beta1","served":true,"storage":true},{"name":"v1","served":true,"storage":false}]}}`,
		"crlf.yaml": strings.ReplaceAll(string(original), "\n", "\r\n"),
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		r := offline(t, "promote", "-f", file, "v2").mustCode(t, 1)
		if r.stdout != "" || !strings.HasPrefix(r.stderr, "error: "+file) {
			t.Errorf("promote -f %s: %q %q", name, r.stdout, r.stderr)
		}
		// The way out is the command line's to say, with the file's name.
		if way := map[string]string{"crd.json": "kubectl create --dry-run=client -o yaml -f " + file, "crlf.yaml": "(dos2unix " + file + " converts it"}[name]; !strings.Contains(r.stderr, way) {
			t.Errorf("promote -f %s does not say %q: %s", name, way, r.stderr)
		}
		if after, _ := os.ReadFile(file); string(after) != content {
			t.Errorf("promote -f %s touched the file", name)
		}
	}
}

// A read that never ends — stdin no one closes — ends on Ctrl-C with one
// error line, as everything else does: the signal reaches the plugin
// (kubectl execs it) while it waits for input.
func TestReadingStdinEndsOnCtrlC(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "kubectl", "crdversion", "status", "-f", "-")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"), "HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Part of a manifest, then nothing: the plugin is reading by now.
	if _, err := io.WriteString(stdin, "apiVersion: apiextensions.k8s.io/v1\n"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// kubectl execs the plugin in its own process: wait for that, so the
	// signal is the plugin's to handle.
	cmdline := fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		raw, _ := os.ReadFile(cmdline)
		return bytes.Contains(raw, []byte("kubectl-crdversion")), nil
	}); err != nil {
		t.Fatalf("kubectl never ran the plugin: %v", err)
	}
	// Signal until it ends: the plugin sets its handler up as it starts.
	ended := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, false, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err
			return true, nil
		default:
			return false, cmd.Process.Signal(syscall.SIGINT)
		}
	})
	if ended != nil {
		t.Fatalf("status -f - never ended on SIGINT: %v", ended)
	}
	r := result{stdout: out.String(), stderr: errOut.String()}
	if exit, ok := (<-done).(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	}
	oneError(t, r.mustCode(t, 1), "reading stdin: interrupt signal received")
}

// YAML counts NEL, U+2028 and U+2029 as line breaks: a comment holding
// one right after the version flags once shifted every edit a line down,
// rewriting comments and leaving both storage flags as they were.
func TestOfflinePromoteWithALineSeparatorInAComment(t *testing.T) {
	original, err := os.ReadFile("../../hack/demo/clusterpolicies-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	content := strings.Replace(string(original), "    storage: true\n", "    storage: true\n    # the old\u2028# one\n", 1)
	if content == string(original) {
		t.Fatal("setup: no storage flag to put a comment after")
	}
	file := filepath.Join(t.TempDir(), "crds.yaml")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	offline(t, "promote", "-f", file, "v2").mustCode(t, 0)
	edited, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(edited), "    # the old\u2028# one\n") {
		t.Errorf("the comment was rewritten:\n%s", edited)
	}
	st := offline(t, "status", "-f", file, "-o", "json").mustCode(t, 0)
	contains(t, "status after the edit", st.stdout, `"storageVersion": "v2"`)
}

// A manifest as controller-gen writes it, with one, two and three old
// versions, the oldest deprecated long ago with a text of its own and, with
// three, one no longer served: promote -f to deprecated and to blocked,
// then rollback -f twice, gives the file back byte for byte at each step
// back; only what a step changed moved, and it moved back.
func TestOfflineStepsAndRollbacksGiveTheFileBack(t *testing.T) {
	version := func(name, flags string) string {
		return "  - name: " + name + "\n    schema:\n      openAPIV3Schema:\n        properties:\n          spec:\n            type: object\n" +
			"            x-kubernetes-preserve-unknown-fields: true\n        type: object\n" + flags + "    subresources:\n      status: {}\n"
	}
	olds := []string{
		version("v1beta1", "    served: true\n    storage: true\n"),
		version("v1alpha2", "    deprecated: true\n    deprecationWarning: 'gadgets v1alpha2 goes away in 2027: use v1'\n    served: true\n    storage: false\n"),
		version("v1alpha1", "    deprecated: true\n    served: false\n    storage: false\n"),
	}
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d old", n), func(t *testing.T) {
			content := "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations:\n    controller-gen.kubebuilder.io/version: v0.16.4\n" +
				"  name: gadgets.example.com\nspec:\n  group: example.com\n  names:\n    kind: Gadget\n    listKind: GadgetList\n    plural: gadgets\n    singular: gadget\n  scope: Namespaced\n  versions:\n" +
				version("v1", "    served: true\n    storage: false\n") + strings.Join(olds[:n], "")
			file := filepath.Join(t.TempDir(), "example.com_gadgets.yaml")
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			read := func() string {
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			offline(t, "promote", "-f", file, "v1").mustCode(t, 0)
			deprecated := read()
			if !strings.Contains(deprecated, "gadgets v1alpha2 goes away in 2027: use v1") && n > 1 {
				t.Errorf("promote -f changed the deprecation text of v1alpha2:\n%s", deprecated)
			}
			offline(t, "promote", "-f", file, "v1").mustCode(t, 0)
			if n == 3 && strings.Count(read(), "served: false") != 3 {
				t.Errorf("blocked: want v1beta1, v1alpha2 and v1alpha1 unserved:\n%s", read())
			}
			offline(t, "rollback", "-f", file).mustCode(t, 0)
			if got := read(); got != deprecated {
				t.Fatalf("rollback -f of blocked:\n%s\nwant the file after deprecated:\n%s", got, deprecated)
			}
			offline(t, "rollback", "-f", file).mustCode(t, 0)
			if got := read(); got != content {
				t.Fatalf("rollback -f of deprecated:\n%s\nwant the file as it was:\n%s", got, content)
			}
		})
	}
}

// status -f names the step to take in the file it read, and that command,
// pasted, takes it there.
func TestStatusOfAFileNamesTheFileStep(t *testing.T) {
	crd := newEnv(t, 3).crd(backups)
	crd.Status.StoredVersions = nil // a manifest in a repository has none
	file := writeCRD(t, crd)
	r := offline(t, "status", "-f", file).mustCode(t, 0)
	want := "kubectl crdversion promote -f " + file + " backups.storage.example.com v1 --to deprecated"
	contains(t, "status -f", r.stdout, "ready: "+want+" (")
	offline(t, strings.Fields(want)[2:]...).mustCode(t, 0)
	if after := read(t, file); !strings.Contains(after, "deprecated: true") {
		t.Errorf("the pasted step left the file:\n%s", after)
	}
	r = offline(t, "promote", "-f", file, "v1").mustCode(t, 0)
	contains(t, "promote -f to blocked", r.stdout, "v1beta1 must be gone from status.storedVersions before the manifest, which stops serving v1beta1, is applied there; run there: kubectl crdversion migrate backups.storage.example.com")
}

// A file whose last lines are metadata.annotations, with no line break at
// its end (as editors that strip it leave it): promote -f puts the record
// after the last annotation, and rollback -f must give the file back byte
// for byte, its missing last line break too. Before, it came back with a
// line break added at the end.
func TestOfflineRollbackKeepsAFileEndingWithoutALineBreak(t *testing.T) {
	content := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: example.com\n  names:\n    kind: Gadget\n    plural: gadgets\n  scope: Namespaced\n  versions:\n" +
		"  - name: v1beta1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n" +
		"  - name: v1\n    served: true\n    storage: false\n    schema:\n      openAPIV3Schema:\n        type: object\n" +
		"metadata:\n  name: gadgets.example.com\n  annotations:\n    owner: team-a # theirs"
	file := filepath.Join(t.TempDir(), "gadgets.yaml")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	offline(t, "promote", "-f", file, "v1").mustCode(t, 0)
	offline(t, "rollback", "-f", file).mustCode(t, 0)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != content {
		t.Fatalf("rollback -f after promote -f:\n%q\nwant the file as it was:\n%q", got, content)
	}
}
