# kubectl-crdversion — see README.md. Every target installs what it needs.
SHELL   := /bin/bash
VERSION ?= v0.1.0
GO      ?= go
BIN     := bin
# The same static build as the release archives (hack/dist.sh): no cgo,
# no paths of this machine, no symbol tables.
LDFLAGS := -s -w -X main.version=$(VERSION) -buildid=
GOFLAGS_BUILD := -trimpath -ldflags "$(LDFLAGS)"

.PHONY: all build kubectl sandbox fullsandbox fullsandbox-shell demo sandbox-shell test unit race e2e lint fuzz dist image krew-manifest bench bench-scale clean help

all: build ## the same as make build

# Every target below with its ## comment: what make help prints.
help: ## every target and what it does
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## the plugin binary, bin/kubectl-crdversion
	CGO_ENABLED=0 GOWORK=off $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/kubectl-crdversion ./cmd/kubectl-crdversion

# The tests, the sandbox and the bench live in a module of their own, test/,
# so the plugin's module requires only what the plugin links.
TESTMOD := cd test &&

sandbox: ## the in-process API server for the demo, bin/crdversion-sandbox
	$(TESTMOD) $(GO) build -o ../$(BIN)/crdversion-sandbox ./cmd/crdversion-sandbox

# kubectl from the test module's k8s.io/kubectl, for a machine that has none:
# the demo runs the plugin through kubectl's plugin dispatch.
kubectl: ## a kubectl, bin/kubectl (only make demo needs one, and only where PATH has none)
	$(TESTMOD) $(GO) build -o ../$(BIN)/kubectl ./cmd/kubectl

demo: build sandbox ## walk through the plugin against an in-process API server
	@command -v kubectl >/dev/null || [ -x $(BIN)/kubectl ] || $(MAKE) --no-print-directory kubectl
	./hack/demo.sh

sandbox-shell: build sandbox ## keep a sandbox running to try commands by hand
	./$(BIN)/crdversion-sandbox serve

# The full control plane (kube-apiserver and kube-controller-manager from
# k8s.io/kubernetes) is a third module, test/full, so neither the plugin nor
# the test module inherits k8s.io/kubernetes' pins. Built without -trimpath:
# kube-apiserver's test server finds its certificates next to its source.
FULLSANDBOX := $(abspath $(BIN)/crdversion-fullsandbox)

fullsandbox: ## the full control plane for tests and by hand, bin/crdversion-fullsandbox (cold: minutes)
	cd test/full && $(GO) build -o $(FULLSANDBOX) ./cmd/crdversion-fullsandbox

fullsandbox-shell: build fullsandbox ## keep a full control plane running (RBAC, admission, the in-tree migrator) to try commands by hand
	./$(BIN)/crdversion-fullsandbox serve

# The controller-runtime integration is a module of its own, controller/
# (the plugin's module never requires controller-runtime), and its tests
# another, test/controller (neither the controller's module takes on the
# test harness nor the test module controller-runtime).
CTRLMOD     := cd controller &&
CTRLTESTMOD := cd test/controller &&

# staticcheck at a fixed version, fetched from the module proxy by go run
# (it touches no go.mod).
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: ## gofmt, go mod tidy -diff, go vet and staticcheck in every module
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) mod tidy -diff
	$(TESTMOD) $(GO) mod tidy -diff
	cd test/full && $(GO) mod tidy -diff
	@# The controller requires the plugin's module at its release, which a
	@# tree between releases has not published: it is tidied against this tree.
	$(CTRLMOD) tmp=$$(mktemp -d) && cp go.mod go.sum $$tmp/ && \
		echo 'replace github.com/kubectl-crdversion/kubectl-crdversion => $(CURDIR)' >> $$tmp/go.mod && \
		GOWORK=off $(GO) mod tidy -modfile=$$tmp/go.mod -diff; rc=$$?; rm -rf $$tmp; exit $$rc
	$(CTRLTESTMOD) $(GO) mod tidy -diff
	$(GO) vet ./...
	$(TESTMOD) $(GO) vet ./...
	cd test/full && $(GO) vet ./...
	$(CTRLMOD) $(GO) vet ./...
	$(CTRLTESTMOD) $(GO) vet ./...
	$(STATICCHECK) ./...
	$(TESTMOD) $(STATICCHECK) ./...
	cd test/full && $(STATICCHECK) ./...
	$(CTRLMOD) $(STATICCHECK) ./...
	$(CTRLTESTMOD) $(STATICCHECK) ./...

# The fuzz targets of the manifest readers, the offline editor, the file
# writer and the audit log reader, each PACKAGE:TARGET: 2000 inputs each in make
# test (a count, not a time: a time limit that ends mid-input fails with
# "context deadline exceeded"), FUZZTIME each in make fuzz.
FUZZ_TARGETS := $(addprefix ./internal/manifest:,FuzzReadCRDs FuzzOfflineStep FuzzRewrite FuzzRewriteAll FuzzWriteFilesInterrupted) \
	./internal/auditlog:FuzzAuditLog
FUZZTIME     ?= 2m

test: lint fullsandbox ## unit (with the race detector), end-to-end (the plugin through kubectl), full-cluster and controller tests, and 2000 inputs of each fuzz target
	$(GO) test -race -count=1 -timeout 5m ./...
	$(CTRLMOD) $(GO) test -race -count=1 -timeout 5m ./...
	$(MAKE) fuzz FUZZTIME=2000x
	$(TESTMOD) CRDVERSION_FULLSANDBOX=$(FULLSANDBOX) $(GO) test -count=1 -timeout 20m ./...
	$(CTRLTESTMOD) CRDVERSION_FULLSANDBOX=$(FULLSANDBOX) $(GO) test -count=1 -timeout 10m ./...
	$(MAKE) race

# The passes whose goroutines meet most, against the in-process API server.
RACE_TESTS = TestMigrateWithConcurrentWriters|TestMigrateWritesOnlyThroughServersThatSwitched|TestMigrateChecksOnTheServerItWritesThrough|TestCancelStopsThePass|TestMigrateReStoresEveryObjectAndPrunes|TestMigrateGentleReStoresEveryObject|TestMigrateStopsWhenTheSchemaNarrowsMidPass

race: ## the per-object passes against the API server under the race detector: concurrent writers, several API servers, cancellation, the gentle pace, a CRD changed mid-pass (~90 s)
	$(TESTMOD) $(GO) test -race -count=1 -timeout 10m -run '^($(RACE_TESTS))$$' ./migrate/

fuzz: ## fuzz the manifest readers, the offline editor, the file writer and the audit log reader, FUZZTIME each (default 2m)
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -parallel 2 $${t%%:*} || exit 1; \
	done

unit: ## the plugin module's own tests: pure logic, no API server, with the race detector
	$(GO) test -race -count=1 ./...

e2e: ## the end-to-end tests alone (test/e2e): the built plugin through kubectl against the in-process API server
	$(TESTMOD) $(GO) test -count=1 -timeout 20m -v ./e2e/

bench: ## benchmarks: migrate vs the rest on the in-process API server at BENCH_RTT=0,10ms,50ms,100ms (BENCH_N=10000, BENCH_RUNS=3, BENCH_ONLY=substring,=exact name,...), status and check on BENCH_CRDS=500, convert of one file of 500, 1000 and 2000 objects, the real in-tree migrator on kube-apiserver (BENCH_N), and migrate over one connection and spread over several through two kube-apiservers behind a balancer (BENCH_HA_N)
	$(TESTMOD) BENCH=1 $(GO) test -count=1 -v -run 'TestBenchTable|TestBenchFleet' -timeout 90m ./bench/ | grep -v '^{"level"'
	$(MAKE) fullsandbox
	$(TESTMOD) BENCH=1 CRDVERSION_FULLSANDBOX=$(FULLSANDBOX) $(GO) test -count=1 -v -run "TestBenchInTreeController|TestBenchAPIServers" -timeout 60m ./bench/ | grep -v '^{"level"'
	$(TESTMOD) $(GO) test -run '^$$' -bench . -benchtime 5x -timeout 30m ./bench/

bench-scale: fullsandbox ## migrate at BENCH_SCALE objects (default 10000,100000,1000000) on kube-apiserver out of process: objects/s beside the listing no-op loop's (a′), and the plugin's peak RSS
	$(TESTMOD) BENCH_SCALE=$${BENCH_SCALE:-10000,100000,1000000} CRDVERSION_FULLSANDBOX=$(FULLSANDBOX) $(GO) test -count=1 -v -run TestBenchScale -timeout 240m ./bench/ | grep -v '^{"level"'

# Release archives go to DIST (hack/dist.sh reads VERSION, PLATFORMS and DIST).
DIST ?= dist

dist: ## release archives and checksums.txt in dist/, and plugins.yaml, the krew manifest naming them
	VERSION=$(VERSION) DIST=$(DIST) ./hack/dist.sh
	@$(MAKE) --no-print-directory krew-manifest

IMAGE_PLATFORMS ?= linux/amd64 linux/arm64

image: ## the plugin's container image, an OCI image layout in DIST/image: FROM scratch, static, non-root, one image per IMAGE_PLATFORMS
	@rm -rf $(DIST)/image-bin
	@for p in $(IMAGE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
		GOTOOLCHAIN=$$(sed -n 's/^toolchain //p' go.mod) CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOWORK=off $(GO) build -trimpath \
			-ldflags "-s -w -X main.version=$(VERSION) -buildid=" -o $(DIST)/image-bin/$$os-$$arch/kubectl-crdversion ./cmd/kubectl-crdversion || exit 1; \
	done
	$(GO) run ./hack/image -version $(VERSION) -bin $(DIST)/image-bin -out $(DIST)/image $(IMAGE_PLATFORMS)
	@rm -rf $(DIST)/image-bin
	@echo "image: $(DIST)/image (OCI layout) for $(IMAGE_PLATFORMS)"

# The release workflow publishes what this writes: its sums are those of
# the archives beside it (and of checksums.txt), its version the tag's.
krew-manifest: ## dist/plugins.yaml from the archives in dist/: .krew.yaml rendered for VERSION with each archive's sha256
	$(GO) run ./hack/krewmanifest -tag $(VERSION) -assets $(DIST) <.krew.yaml >$(DIST)/plugins.yaml.tmp
	mv $(DIST)/plugins.yaml.tmp $(DIST)/plugins.yaml
	@echo "dist: $(DIST)/plugins.yaml for $(VERSION)"

clean: ## remove bin/ and dist/
	rm -rf $(BIN) dist
