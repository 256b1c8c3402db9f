package main

import (
	"fmt"
	"os"
	"sync"
)

// processTB lets kube-apiserver's test-server helper, which wants a
// testing.TB, run in a plain process: logs go to stderr when verbose,
// failures end the process, and cleanups run when the process stops.
type processTB struct {
	verbose bool
	tmp     string

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func (t *processTB) Helper()            {}
func (t *processTB) Name() string       { return "crdversion-fullsandbox" }
func (t *processTB) Attr(_, _ string)   {}
func (t *processTB) Chdir(string)       {}
func (t *processTB) Setenv(k, v string) { _ = os.Setenv(k, v) }
func (t *processTB) TempDir() string    { return t.tmp }
func (t *processTB) Skipped() bool      { return false }

func (t *processTB) Log(args ...any) {
	if t.verbose {
		fmt.Fprintln(os.Stderr, args...)
	}
}

func (t *processTB) Logf(format string, args ...any) { t.Log(fmt.Sprintf(format, args...)) }

func (t *processTB) Error(args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	fmt.Fprintln(os.Stderr, append([]any{"fullsandbox:"}, args...)...)
}

func (t *processTB) Errorf(format string, args ...any) { t.Error(fmt.Sprintf(format, args...)) }
func (t *processTB) Fail()                             { t.Error("failed") }
func (t *processTB) Failed() bool                      { t.mu.Lock(); defer t.mu.Unlock(); return t.failed }
func (t *processTB) FailNow()                          { t.Fatal("failed") }
func (t *processTB) Fatal(args ...any)                 { t.Error(args...); t.runCleanups(); os.Exit(1) }
func (t *processTB) Fatalf(format string, args ...any) { t.Fatal(fmt.Sprintf(format, args...)) }
func (t *processTB) Skip(args ...any)                  { t.Fatal(append([]any{"skip:"}, args...)...) }
func (t *processTB) Skipf(format string, args ...any)  { t.Skip(fmt.Sprintf(format, args...)) }
func (t *processTB) SkipNow()                          { t.Skip() }

func (t *processTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// runCleanups runs the registered cleanups, last first, as testing does.
func (t *processTB) runCleanups() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
