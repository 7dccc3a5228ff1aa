GO ?= go
BIN := bin/stampede

.PHONY: all build test vet bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/stampede
	$(GO) build -o bin/stampede-worker ./cmd/stampede-worker

vet:
	$(GO) vet ./...

# The whole test suite with the race detector; tests use small fleets on
# loopback and need no host tuning.
test: vet
	$(GO) test -race -shuffle=on -timeout 20m ./...

# The main job: a restart storm of 10,000 real WebSocket clients against the
# bundled target, once per backoff policy, then the comparison table. Results
# go to stampede-results/bench-<time>/. Extra flags: make bench ARGS='--clients 20000'.
bench: build
	$(BIN) bench $(ARGS)

clean:
	rm -rf bin
