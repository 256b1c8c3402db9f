package packaging

import (
	"debug/elf"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// make build is the release archives' build: static, so the binary a
// developer tries is the one krew ships, and runs on any Linux.
func TestMakeBuildIsStatic(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF binary of a Linux build")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed (.ci/run installs it)")
	}
	repo := copyRepo(t)
	cmd := exec.CommandContext(t.Context(), "make", "build")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	f, err := elf.Open(filepath.Join(repo, "bin", "kubectl-crdversion"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("bin/kubectl-crdversion asks for a dynamic loader: not a static build")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("bin/kubectl-crdversion links %v: not a static build", libs)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("bin/kubectl-crdversion keeps its symbol table: built without -s")
	}
}

// The sandbox is a newcomer's first command after make demo: --help says
// what it does and how to use it, and exits 0.
func TestSandboxHelp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "crdversion-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/crdversion-sandbox").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, arg := range []string{"--help", "-h", "help"} {
		out, err := exec.Command(bin, arg).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "crdversion-sandbox serve [flags]") || !strings.Contains(string(out), "-objects int") {
			t.Errorf("crdversion-sandbox %s: %v\n%s", arg, err, out)
		}
	}
	out, err := exec.Command(bin, "bogus").CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.HasPrefix(string(out), "error: unknown command \"bogus\"") {
		t.Errorf("crdversion-sandbox bogus: exit %d\n%s", code, out)
	}
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
