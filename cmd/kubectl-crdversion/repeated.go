package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// takesFleet marks a command that runs on every --context given.
const takesFleet = "crdversion.kubectl.io/fleet"

// onceValue remembers every value given to a flag that keeps one: pflag
// keeps the last in silence, and a user who named two clusters, or two
// files, would have the command act on one.
type onceValue struct {
	pflag.Value
	given []string
}

func (o *onceValue) Set(s string) error {
	if !slices.Contains(o.given, s) {
		o.given = append(o.given, s)
	}
	return o.Value.Set(s)
}

// rememberValues wraps every flag of fs that keeps one value (not a list,
// a count or a map), once.
func rememberValues(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		t := f.Value.Type()
		if _, wrapped := f.Value.(*onceValue); wrapped || strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") || t == "count" || strings.Contains(t, "To") {
			return
		}
		f.Value = &onceValue{Value: f.Value}
	})
}

// rememberAll wraps the flags of cmd and every command under it.
func rememberAll(cmd *cobra.Command) {
	rememberValues(cmd.PersistentFlags())
	rememberValues(cmd.LocalNonPersistentFlags())
	for _, c := range cmd.Commands() {
		rememberAll(c)
	}
}

// refuseRepeated refuses a flag that keeps one value given several: only
// a command that takes a fleet takes several --context.
func refuseRepeated(c *cobra.Command) error {
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		o, ok := f.Value.(*onceValue)
		if !ok || len(o.given) < 2 || err != nil {
			return
		}
		if f.Name == "context" && c.Annotations[takesFleet] != "" {
			return
		}
		err = fmt.Errorf("--%s given %d values (%s): %s takes one", f.Name, len(o.given), strings.Join(o.given, ", "), c.CommandPath())
		if f.Name == "context" {
			err = fmt.Errorf("%w (status, check, migrate, verify, promote and rollback take several: a fleet)", err)
		}
	})
	return err
}
