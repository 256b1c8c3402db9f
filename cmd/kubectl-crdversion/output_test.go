package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// -o and --template join as kubectl joins them, in either order.
func TestOutputTakesTemplateAsKubectlDoes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		err  string
	}{
		{[]string{"-o", "jsonpath", "--template", "{.kind}"}, "jsonpath={.kind}", ""},
		{[]string{"--template", "{.kind}", "-o", "jsonpath"}, "jsonpath={.kind}", ""},
		{[]string{"--template", "{{.kind}}"}, "go-template={{.kind}}", ""},
		{[]string{"-o", "jsonpath={.a}", "--template", "{.b}"}, "jsonpath={.a}", ""},
		{[]string{"-o", "yaml", "--template", "{.b}"}, "yaml", ""},
		{[]string{"-o", "json"}, "json", ""},
		{[]string{"-o", "jsonpath"}, "jsonpath", "template format specified but no template given"},
	} {
		var value string
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		addOutputFlag(cmd, &value)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if value != tc.want {
			t.Errorf("%v: -o is %q, want %q", tc.args, value, tc.want)
		}
		_, err := parseOutput(value)
		if got := errString(err); got != tc.err {
			t.Errorf("%v: parseOutput error %q, want %q", tc.args, got, tc.err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
