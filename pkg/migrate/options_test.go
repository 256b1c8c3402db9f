package migrate

import (
	"reflect"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
)

// The options are copied field by field into the engine's: a field added on
// either side and not copied would be silently ignored, so each face field
// set must arrive set, and each engine field the face lacks is named here.
func TestOptionsReachTheEngine(t *testing.T) {
	for _, c := range []struct {
		face, engine any
		engineOnly   []string
	}{
		{filled[Options](t).engine(), migration.Options{}, []string{"Countdown"}},
		{filled[RestoreOptions](t).engine(), migration.RestoreOptions{}, []string{"OnLimit"}},
		{filled[PromoteOptions](t).engine(), migration.PromoteOptions{}, []string{"OwnRequestsDir"}},
		{filled[RollbackOptions](t).engine(), migration.RollbackOptions{}, nil},
	} {
		got := reflect.ValueOf(c.face)
		for i := range got.NumField() {
			f := got.Type().Field(i)
			switch only := contains(c.engineOnly, f.Name); {
			case only && !got.Field(i).IsZero():
				t.Errorf("%s.%s: set, though the face has no such option", got.Type(), f.Name)
			case !only && got.Field(i).IsZero():
				t.Errorf("%s.%s: not copied from the face's options", got.Type(), f.Name)
			}
		}
	}
}

// filled is a T with every field set to something other than its zero value.
func filled[T any](t *testing.T) T {
	var v T
	fill(t, reflect.ValueOf(&v).Elem())
	return v
}

func fill(t *testing.T, v reflect.Value) {
	if v.Type() == reflect.TypeFor[logr.Logger]() {
		v.Set(reflect.ValueOf(testr.New(t)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i))
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { return nil }))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		if v.Type() == reflect.TypeFor[*Sightings]() {
			v.Set(reflect.ValueOf(NewSightings("")))
		}
	default:
		t.Fatalf("fill: no value for a %s", v.Type())
	}
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// The face's constants are the engine's, spelled out so that go doc shows values.
func TestConstantsAreTheEngines(t *testing.T) {
	if DefaultSwitchTimeout != migration.DefaultSwitchTimeout || DefaultSwitchGrace != migration.DefaultSwitchGrace || NoSwitchGrace != migration.NoSwitchGrace {
		t.Errorf("the face's switch constants (%v, %v, %v) are not the engine's (%v, %v, %v)",
			DefaultSwitchTimeout, DefaultSwitchGrace, NoSwitchGrace, migration.DefaultSwitchTimeout, migration.DefaultSwitchGrace, migration.NoSwitchGrace)
	}
}
