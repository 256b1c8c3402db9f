package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// A script pipes `-o json|yaml` into jq or yq: every command, at every step
// of a version's path, with something to report and with nothing, writes
// exactly one document to stdout, and every other line (plans, proofs,
// counts, warnings) to stderr.
func TestEveryDocumentIsOneDocument(t *testing.T) {
	e := newEnv(t, 30)
	dir := t.TempDir()
	clusterpolicies := writeCRD(t, e.crd("clusterpolicies.policy.example.com"))
	withClusterpoliciesV2 := writeCRD(t, withV2(e.crd("clusterpolicies.policy.example.com")))
	offlineFile := writeCRD(t, e.crd(backups))
	object := filepath.Join(dir, "backup.yaml")
	if err := os.WriteFile(object, []byte("apiVersion: storage.example.com/v1beta1\nkind: Backup\nmetadata:\n  name: nightly\n  namespace: team-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Each step runs once with -o json and, where it changes nothing, once
	// with -o yaml too; a step that changes the cluster alternates.
	steps := []struct {
		args  []string
		codes []int // the exit codes the step may end with
		both  bool  // run with both formats
	}{
		{[]string{"version"}, []int{0}, true},
		{[]string{"status"}, []int{3}, true},
		{[]string{"status", "-l", "app=nothing-has-this"}, []int{0}, true},
		{[]string{"status", "-f", clusterpolicies}, []int{0}, true},
		{[]string{"verify", "backups"}, []int{0}, true},
		{[]string{"usage", "cert"}, []int{0, 3}, true},
		{[]string{"check", "-f", clusterpolicies}, []int{0}, true},
		{[]string{"check", "-f", clusterpolicies, "--against-file", clusterpolicies}, []int{0}, true},
		{[]string{"convert", "-f", object, "--to", "v1"}, []int{0}, true},
		{[]string{"promote", "-f", offlineFile, "v1", "--dry-run=client"}, []int{0}, true},
		{[]string{"promote", "-f", offlineFile, "v1"}, []int{0}, false},
		{[]string{"rollback", "-f", offlineFile}, []int{0}, false},
		{[]string{"promote", "backups", "v1", "--dry-run=server"}, []int{0}, true},
		{[]string{"promote", "backups", "v1"}, []int{0}, false},                   // bridge
		{[]string{"promote", "backups", "v1"}, []int{0}, false},                   // deprecated: the switch's proof
		{[]string{"prune", "gadgets", "-q", "--switch-grace=0"}, []int{0}, false}, // a pass of its own
		{[]string{"migrate", "backups", "-q", "--switch-grace=0", "--dry-run=server"}, []int{0}, true},
		{[]string{"migrate", "--all", "-q", "--switch-grace=0"}, []int{0}, false},
		{[]string{"migrate", "--all", "-q", "--switch-grace=0"}, []int{0}, true},              // nothing pending
		{[]string{"promote", "backups", "v1", "--despite-clients=requests"}, []int{0}, false}, // blocked (sharedMetric)
		{[]string{"rollback", "backups", "--dry-run=server"}, []int{0}, true},
		{[]string{"promote", "backups", "v1"}, []int{0}, false}, // removed: the managedFields cleanup
		{[]string{"promote", "clusterpolicies", "v2", "--from-file", withClusterpoliciesV2}, []int{0}, false},
		{[]string{"rollback", "clusterpolicies"}, []int{0}, false},
	}
	next := "json"
	for _, s := range steps {
		formats := []string{next}
		if s.both {
			formats = []string{"json", "yaml"}
		} else if next == "json" {
			next = "yaml"
		} else {
			next = "json"
		}
		for _, f := range formats {
			args := append(append([]string{}, s.args...), "-o", f)
			r := e.plugin(args...)
			if !codeIn(r.code, s.codes) {
				t.Fatalf("%s: exit %d, want one of %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, s.codes, r.stdout, r.stderr)
			}
			if err := oneDocument(r.stdout, f); err != nil {
				t.Errorf("%s: stdout is not one %s document: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), f, err, r.stdout, r.stderr)
			}
		}
	}
}

func codeIn(code int, codes []int) bool {
	for _, c := range codes {
		if c == code {
			return true
		}
	}
	return false
}

// oneDocument parses out as exactly one JSON value or one YAML document,
// an object with a kind (an empty report is still a report).
func oneDocument(out, format string) error {
	var docs [][]byte
	if format == "json" {
		dec := json.NewDecoder(strings.NewReader(out))
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			docs = append(docs, raw)
		}
	} else {
		r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if len(bytes.TrimSpace(doc)) > 0 {
				docs = append(docs, doc)
			}
		}
	}
	if len(docs) != 1 {
		return fmt.Errorf("%d documents", len(docs))
	}
	var obj map[string]any
	if err := yaml.Unmarshal(docs[0], &obj); err != nil {
		return err
	}
	if obj["kind"] == nil {
		return errors.New("the document has no kind")
	}
	// A line of prose can parse as YAML too ("note: ..." is a key): what
	// the plugin writes is the document as YAML writes it, nothing around.
	if format == "yaml" {
		canonical, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if string(canonical) != out {
			return errors.New("more than the document (it reads back otherwise)")
		}
	}
	return nil
}
