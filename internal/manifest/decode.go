package manifest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kjson "sigs.k8s.io/json"
)

// MaxInput bounds what one input (a file, or stdin) may hold: far above
// any CRD manifest (the API server takes 3 MiB a request), far below what
// would exhaust memory.
const MaxInput = 64 << 20

// readBounded reads what open gives up to MaxInput, and fails past it. It
// returns when ctx ends (Ctrl-C) even while open or a read blocks, as they
// do forever on a FIFO no one writes or a stdin no one closes; the blocked
// goroutine ends with the process.
func readBounded(ctx context.Context, name string, open func() (io.ReadCloser, error)) ([]byte, error) {
	type read struct {
		src []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		r, err := open()
		if err != nil {
			done <- read{err: err}
			return
		}
		defer r.Close()
		src, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
		if err != nil {
			err = fmt.Errorf("reading %s: %w", name, err)
		}
		done <- read{src, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("reading %s: %w", name, context.Cause(ctx))
	case r := <-done:
		if r.err == nil && len(r.src) > MaxInput {
			r.err = fmt.Errorf("%s holds more than %d MiB: not a manifest", name, MaxInput>>20)
		}
		return r.src, r.err
	}
}

// objectsOf gives the objects of one document: the document itself, or
// the items of a List (what kubectl get -o yaml writes), with the node of
// each and whether it came from a List. A document that does not decode
// (a duplicate key, an alias expanded past yaml's bound) is an error, never
// skipped.
func objectsOf(doc *yaml.Node) ([]decoded, error) {
	var m map[string]any
	if err := doc.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, nil
	}
	kind, _ := m["kind"].(string)
	if kind != "List" && kind != "CustomResourceDefinitionList" {
		return []decoded{{obj: m, node: root(doc), item: -1}}, nil
	}
	items, _ := m["items"].([]any)
	nodes := lookup(root(doc), "items")
	var out []decoded
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s item %d is not an object", kind, i+1)
		}
		var node *yaml.Node
		if nodes != nil && i < len(nodes.Content) {
			node = nodes.Content[i]
		}
		out = append(out, decoded{obj: obj, node: node, item: i})
	}
	return out, nil
}

// decoded is one object of a document: item is its index in a List, or -1.
type decoded struct {
	obj  map[string]any
	node *yaml.Node
	item int
}

// strictCRD decodes a CRD as `kubectl apply --server-side` does (field
// validation Strict): a field the type does not have is an error, at the
// line it is on, never dropped.
func strictCRD(d decoded) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := json.Marshal(d.obj)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	strict, err := kjson.UnmarshalStrict(raw, crd, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
			if line := lineOf(d.node, e.Error()); line > 0 {
				msgs[i] = fmt.Sprintf("line %d: %s", line, e.Error())
			}
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return crd, nil
}

var (
	quotedPath = regexp.MustCompile(`"([^"]+)"`)
	pathPart   = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)
)

// lineOf finds the line of the field a strict error names (`unknown field
// "spec.versions[0].deprecatd"`), walking the document's nodes; 0 if it
// cannot.
func lineOf(n *yaml.Node, msg string) int {
	m := quotedPath.FindStringSubmatch(msg)
	if n == nil || m == nil {
		return 0
	}
	line := n.Line
	for _, part := range pathPart.FindAllStringSubmatch(m[1], -1) {
		switch {
		case part[2] != "":
			i, _ := strconv.Atoi(part[2])
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			if n.Kind != yaml.MappingNode {
				return line
			}
			found := false
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == part[1] {
					line, n, found = n.Content[j].Line, n.Content[j+1], true
					break
				}
			}
			if !found {
				return line
			}
		}
	}
	return line
}
