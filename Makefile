GO ?= go
BIN := bin/stampede

.PHONY: all build test vet bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/stampede

vet:
	$(GO) vet ./...

# The whole test suite with the race detector; tests use small fleets on
# loopback and need no host tuning.
test: vet
	$(GO) test -race -shuffle=on -timeout 20m ./...

clean:
	rm -rf bin
