# Corral — the two commands a newcomer needs are `make up` and `make test`.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
export CGO_ENABLED ?= 0

BIN        := bin/corral
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -s -w -X github.com/corral-sh/corral/internal/version.Version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
UP_LISTEN  ?= 127.0.0.1:7070

.PHONY: all build up test deps lint bench fuzz clean web web-test e2e

all: build

## build: the static corral binary (CGO_ENABLED=0) with the web UI embedded,
## and its slim build corral-sandboxd (only the in-sandbox commands) that
## sandboxes run
build: web
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/corral
	go build -trimpath -tags slim -ldflags '$(LDFLAGS)' -o $(BIN)-sandboxd ./cmd/corral

## up: install what is needed, start the engines, build, make the default
## sandbox template (cached after the first time), and run the control plane
## in the foreground on $(UP_LISTEN) with SQLite and the best runtime.
up: deps build
	scripts/engines.sh
	$(BIN) template build --name default --missing
	$(BIN) up --listen $(UP_LISTEN)

## test: install what the suite needs, start the engines and PostgreSQL, lint,
## run every test (the web UI's component tests first; its end-to-end tests
## are internal/webui's TestE2E). The static bin/corral is what sandboxes mount.
test: deps lint build web-test
	scripts/engines.sh
	CORRAL_TEST_POSTGRES=$$(scripts/postgres.sh) CORRAL_TEST_BINARY=$(CURDIR)/$(BIN) \
	  CORRAL_TEST_SANDBOXD_BINARY=$(CURDIR)/$(BIN)-sandboxd \
	  CGO_ENABLED=1 go test -race -count=1 -timeout 25m ./...

## web: the web UI — npm ci, then the type check and vite build into
## internal/webui/static/dist, which go build embeds. Does nothing when
## nothing under web/ changed.
WEB_DIST := internal/webui/static/dist/index.html
WEB_DEPS := web/node_modules/.package-lock.json
WEB_SRC  := $(shell find web/src web/public -type f 2>/dev/null) web/index.html \
            web/package.json web/tsconfig.json web/vite.config.ts
web: $(WEB_DIST)

$(WEB_DEPS): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund

$(WEB_DIST): $(WEB_DEPS) $(WEB_SRC)
	cd web && npm run build

## web-test: the web UI's component tests (Vitest, jsdom)
web-test: $(WEB_DEPS)
	cd web && npm test

## e2e: the web UI's end-to-end tests alone: a real `corral up` (bwrap, the
## minimal template) driven through Debian's Chromium by playwright-core;
## screenshots land in artifacts/screenshots/
e2e: deps build
	CORRAL_TEST_BINARY=$(CURDIR)/$(BIN) CORRAL_TEST_SANDBOXD_BINARY=$(CURDIR)/$(BIN)-sandboxd \
	  go test -count=1 -timeout 15m -run TestE2E -v ./internal/webui/

## deps: system packages the tests and `up` use (Debian; needs root)
deps:
	@scripts/deps.sh

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags slim ./cmd/... ./internal/cli/...
	go run $(STATICCHECK) ./...

## bench: micro-benchmarks, then the sandboxd figures against the anchors
bench: build
	go test -run '^$$' -bench . -benchmem -benchtime 2s ./internal/... 2>&1 | grep -E '^(Benchmark|ok|PASS|FAIL|goos|cpu)'
	$(BIN) bench sandboxd
	$(BIN) bench runtime
	$(BIN) bench controlplane --postgres "$$(scripts/postgres.sh)"

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	go test -run '^$$' -fuzz FuzzResolve -fuzztime $(FUZZTIME) ./internal/sandboxd/files/
	go test -run '^$$' -fuzz FuzzParseClientFrame -fuzztime $(FUZZTIME) ./api/sandboxapi/

clean:
	rm -rf bin internal/webui/static/dist
