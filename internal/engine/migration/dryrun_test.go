package migration

import (
	"errors"
	"testing"
)

// ParseDryRun refuses in kubectl's words, and an importer can tell the
// refusal with errors.Is, as it can the engine's.
func TestParseDryRun(t *testing.T) {
	for in, want := range map[string]DryRun{"": DryRunNone, "none": DryRunNone, "client": DryRunClient, "server": DryRunServer} {
		if got, err := ParseDryRun(in); err != nil || got != want {
			t.Errorf("ParseDryRun(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseDryRun("all")
	if !errors.Is(err, ErrInvalidDryRun) {
		t.Errorf("ParseDryRun(all): %v is not ErrInvalidDryRun", err)
	}
	if want := `invalid dry-run value (all): must be "none", "server", or "client"`; err == nil || err.Error() != want {
		t.Errorf("ParseDryRun(all): %v, want %s", err, want)
	}
}
