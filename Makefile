GO ?= go
BIN := bin/stampede

.PHONY: all build release test vet lint bench fuzz clean

all: build

# -buildvcs=auto stamps the version and commit into every build from a
# clone, as a release build is, even where GOFLAGS says -buildvcs=false;
# a tree without its .git (a tarball) still builds, unstamped.
BUILDVCS := -buildvcs=auto

build:
	$(GO) build $(BUILDVCS) -o $(BIN) ./cmd/stampede
	# Without cgo the worker maps no libc: about 1.4 MiB less RSS in each
	# of a run's loadgen and target processes (docs/sizing.md).
	CGO_ENABLED=0 $(GO) build $(BUILDVCS) -o bin/stampede-worker ./cmd/stampede-worker

# A release build into RELEASE_DIR: static, without the build machine's
# paths or symbol table, stamped with the commit; the same commit and Go
# give the same bytes (lab/reproducible.sh checks; docs/install.md).
RELEASE_DIR ?= bin/release
release:
	CGO_ENABLED=0 $(GO) build $(BUILDVCS) -trimpath -ldflags=-s -o $(RELEASE_DIR)/ ./cmd/stampede ./cmd/stampede-worker

# The Go modules of the tree: the main one, deploy/kubernetes (the
# manifests' strict decoding, the only requirer of the Kubernetes modules),
# lab (the measurement programs, which require the main module through a
# replace of ../) and lab/otelcol (an OpenTelemetry Collector that the OTLP
# export's test builds and runs, so the product's go.mod never requires the
# collector).
MODULES := . deploy/kubernetes lab lab/otelcol

vet:
	set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

# staticcheck, pinned; installed into bin/ when missing, so a fresh
# machine needs only Go (and the module proxy, once).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/bin/staticcheck-$(STATICCHECK_VERSION)/staticcheck

$(STATICCHECK):
	GOBIN=$(dir $(STATICCHECK)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(STATICCHECK)
	set -e; for m in $(MODULES); do (cd $$m && $(STATICCHECK) ./...); done

# go vet, staticcheck, then the whole test suite with the race detector,
# every module; tests use small fleets on loopback and need no host tuning.
# bin/testlog runs go test -json and prints what plain go test prints, then
# each module's skipped tests with their messages (docs/testing.md); its
# exit status is go test's.
TESTLOG := $(CURDIR)/bin/testlog
test: vet lint
	bash scripts/services.sh
	$(GO) build -o $(TESTLOG) ./internal/testlog
	set -e; for m in $(MODULES); do (cd $$m && GO=$(GO) $(TESTLOG) -race -shuffle=on -timeout 20m ./...); done

# The main job: a restart storm of 10,000 real WebSocket clients against the
# bundled target, once per backoff policy, then the comparison table. Results
# go to stampede-results/bench-<time>/. Extra flags: make bench ARGS='--clients 20000'.
bench: build
	$(BIN) bench $(ARGS)

# Every fuzz target, PACKAGE:FuzzName, run one after another for FUZZTIME
# each, one worker, from its committed corpus (testdata/fuzz/FuzzName). A
# finding stops the loop and is written to that folder: fix the code, keep
# the input as the regression case. make fuzz FUZZTIME=2m for longer.
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./backoff:FuzzParse \
	./chaos:FuzzParse \
	./cluster/hub:FuzzVerify \
	./cmd/stampede:FuzzHeaderFlag \
	./haproxy:FuzzParseStat \
	./connerr:FuzzParseRetryAfter \
	./hoststat:FuzzCountTCPStates \
	./hoststat:FuzzParseKernelCounters \
	./httpretry:FuzzParseRetryAfter \
	./loadgen:FuzzFrames \
	./loadgen:FuzzParseAnswer \
	./loadgen:FuzzParseSourceIPs \
	./protocol:FuzzDecode \
	./proxy:FuzzFaultQuery \
	./report:FuzzLoad \
	./report:FuzzReadTable \
	./results:FuzzParseSLO \
	./results:FuzzReadHistogramLog \
	./results/track:FuzzUints \
	./store:FuzzResolve \
	./store:FuzzScanLog \
	./store/jsstore:FuzzVerifyBlock \
	./target:FuzzControlQuery

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz: $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -parallel 1 $$pkg; \
	done

clean:
	rm -rf bin
