# driftwatch — `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Tools (Terraform/OpenTofu, providers mirror) are built once into a cache
# outside the checkout, keyed by version, so fresh clones reuse them.
export DRIFTWATCH_TOOLS ?= $(HOME)/.cache/driftwatch
TOOLS_ENV := $(DRIFTWATCH_TOOLS)/tools.env
KUBE_ENV  := $(DRIFTWATCH_TOOLS)/kube.env
LINT_ENV  := $(DRIFTWATCH_TOOLS)/lint.env
IMAGE_ENV := $(DRIFTWATCH_TOOLS)/image.env
S3_ENV    := $(DRIFTWATCH_TOOLS)/s3.env
AUTH_ENV  := $(DRIFTWATCH_TOOLS)/auth.env
PG_ENV    := $(DRIFTWATCH_TOOLS)/pg.env
IMAGE     ?= driftwatch:dev
GO        ?= go
BIN       := bin/driftwatch
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/driftwatch/driftwatch/internal/version.Version=$(VERSION)

#? help: list the targets
help:
	@grep -E '^#\? ' $(MAKEFILE_LIST) | sed 's/^#? /  /'

#? tools: provision Terraform/OpenTofu and the offline provider mirror (idempotent)
tools:
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@bash hack/provision.sh | tail -n 2 | sed -E 's/^([A-Z_]+)=(.*)$$/\1="\2"/' > $(TOOLS_ENV).tmp
	@grep -q '^TF_BINARIES=' $(TOOLS_ENV).tmp && mv $(TOOLS_ENV).tmp $(TOOLS_ENV)
	@cat $(TOOLS_ENV)

#? kube-tools: etcd (Debian), kube-apiserver, kube-controller-manager and helm built from the Go module proxy (idempotent)
kube-tools:
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@bash hack/provision-k8s.sh | tail -n 1 | sed -E 's/^([A-Z_]+)=(.*)$$/\1="\2"/' > $(KUBE_ENV).tmp
	@grep -q '^KUBE_BIN_DIR=' $(KUBE_ENV).tmp && mv $(KUBE_ENV).tmp $(KUBE_ENV)
	@cat $(KUBE_ENV)

#? lint-tools: golangci-lint built from the Go module proxy (idempotent)
lint-tools:
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@bash hack/provision-lint.sh | tail -n 1 | sed -E 's/^([A-Z_]+)=(.*)$$/\1="\2"/' > $(LINT_ENV).tmp
	@grep -q '^GOLANGCI_LINT=' $(LINT_ENV).tmp && mv $(LINT_ENV).tmp $(LINT_ENV)
	@cat $(LINT_ENV)

#? s3-tools: SeaweedFS's weed (an S3-compatible store, for the s3 backend tests) built from the Go module proxy (idempotent)
s3-tools:
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@bash hack/provision-s3.sh | tail -n 1 | sed -E 's/^([A-Z_]+)=(.*)$$/\1="\2"/' > $(S3_ENV).tmp
	@grep -q '^WEED=' $(S3_ENV).tmp && mv $(S3_ENV).tmp $(S3_ENV)
	@cat $(S3_ENV)

#? auth-tools: oauth2-proxy (for the tests of server.auth proxy mode behind a real proxy) built from the Go module proxy (idempotent)
auth-tools:
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@bash hack/provision-auth.sh | tail -n 1 | sed -E 's/^([A-Z0-9_]+)=(.*)$$/\1="\2"/' > $(AUTH_ENV).tmp
	@grep -q '^OAUTH2_PROXY=' $(AUTH_ENV).tmp && mv $(AUTH_ENV).tmp $(AUTH_ENV)
	@cat $(AUTH_ENV)

#? pg-tools: Debian's postgresql (initdb, postgres) for the postgres store tests, installed only when missing (idempotent)
pg-tools:
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@bash hack/provision-pg.sh | tail -n 1 | sed -E 's/^([A-Z_]+)=(.*)$$/\1="\2"/' > $(PG_ENV).tmp
	@grep -q '^PG_BIN_DIR=' $(PG_ENV).tmp && mv $(PG_ENV).tmp $(PG_ENV)
	@cat $(PG_ENV)

#? image-tools: our own dockerd (Debian's docker.io, under $DRIFTWATCH_TOOLS/image) and the Dockerfile's base images, assembled offline (idempotent)
image-tools:
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@bash hack/provision-image.sh | tail -n 5 | sed -E 's/^([A-Z_]+)=(.*)$$/\1="\2"/' > $(IMAGE_ENV).tmp
	@grep -q '^RUNTIME_IMAGE=' $(IMAGE_ENV).tmp && mv $(IMAGE_ENV).tmp $(IMAGE_ENV)
	@cat $(IMAGE_ENV)

#? image: build the Dockerfile offline into driftwatch:dev (IMAGE=...) with the Terraform on PATH that `make tools` links; TOOL=tofu: into driftwatch:dev-tofu (IMAGE-tofu) with the OpenTofu `make tools` builds
# The tool comes from the build context (TOOL_SOURCE=context), its version
# (asked of the binary) labels the image. The image's terraform is the one
# hack/provision.sh links as $DRIFTWATCH_TOOLS/bin/terraform: PATH's,
# resolved, never one inside $DRIFTWATCH_TOOLS. It is found here the same
# way, so the Terraform image need not wait for `make tools` (OpenTofu's
# build) and builds beside it. Its tofu is $DRIFTWATCH_TOOLS/bin/tofu, which
# `make tools` must have built first (`make provision` builds it, then this
# image). Both variants share every layer but the tool's.
TOOL       ?= terraform
IMAGE_TOFU  = $(IMAGE)-tofu
image: image-tools
	@source $(IMAGE_ENV); export DOCKER_HOST; \
	case "$(TOOL)" in \
	terraform) tag=$(IMAGE); bin=$$(command -v terraform || true); [ -z "$$bin" ] || bin=$$(readlink -f "$$bin"); \
	  case "$$bin" in "" | "$$(readlink -m $(DRIFTWATCH_TOOLS))"/*) echo "make image: no terraform on PATH (TOOL=tofu builds the OpenTofu image)"; exit 1 ;; esac ;; \
	tofu) tag=$(IMAGE_TOFU); bin=$(DRIFTWATCH_TOOLS)/bin/tofu; \
	  [ -x "$$bin" ] || { echo "make image: no $$bin: run \`make tools\` first"; exit 1; } ;; \
	*) echo "make image: TOOL must be terraform or tofu, not $(TOOL)"; exit 1 ;; \
	esac; \
	ver=$$(CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null "$$bin" version -json | sed -n 's/^ *"terraform_version": *"\([^"]*\)".*/\1/p'); \
	[ -n "$$ver" ] || { echo "make image: $$bin version -json gave no version"; exit 1; }; \
	mkdir -p bin/image; cmp -s "$$bin" bin/image/$(TOOL) || cp "$$bin" bin/image/$(TOOL); \
	start=$$SECONDS; \
	DOCKER_BUILDKIT=$$DOCKER_BUILDKIT "$$DOCKER" build --network host \
	  --build-arg BUILD_IMAGE="$$BUILD_IMAGE" --build-arg RUNTIME_IMAGE="$$RUNTIME_IMAGE" \
	  --build-arg TOOL=$(TOOL) --build-arg TOOL_SOURCE=context --build-arg "$$(echo $(TOOL) | tr a-z A-Z)_VERSION=$$ver" \
	  --build-arg VERSION=$(VERSION) -t $$tag . ; \
	"$$DOCKER" image prune -f --filter label=org.opencontainers.image.title=driftwatch >/dev/null; \
	size=$$("$$DOCKER" image inspect --format '{{.Size}}' $$tag); \
	echo "$$tag ($(TOOL) $$ver): $$(numfmt --to=si --suffix=B $$size) ($$size bytes), built in $$((SECONDS - start))s"

#? deps: install the Debian packages the tests need (chromium, git, bubblewrap, passt), if missing
deps:
	@missing=""; for p in chromium:chromium git:git bwrap:bubblewrap pasta:passt; do command -v $${p%%:*} >/dev/null || missing="$$missing $${p##*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  mkdir -p $(DRIFTWATCH_TOOLS); \
	  flock $(DRIFTWATCH_TOOLS)/.apt.lock sh -c "$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null"; \
	fi

#? build: build bin/driftwatch
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/driftwatch

#? run: audit the example inventory (configs/examples), which shows real drift
# It needs one Terraform: `terraform` from PATH when there is one (then
# OpenTofu is not built), else OpenTofu; the tests build both (make tools).
RUN_ENV := $(DRIFTWATCH_TOOLS)/run-tools.env
run: build
	@mkdir -p $(DRIFTWATCH_TOOLS)
	@tofu=1; command -v terraform >/dev/null && tofu=0; \
	DRIFTWATCH_BUILD_TOFU=$$tofu DRIFTWATCH_BUILD_NEWEST=0 bash hack/provision.sh | tail -n 2 | sed -E 's/^([A-Z_]+)=(.*)$$/\1="\2"/' > $(RUN_ENV).tmp
	@grep -q '^TF_BINARIES=' $(RUN_ENV).tmp && mv $(RUN_ENV).tmp $(RUN_ENV)
	@DRIFTWATCH_TOOLS_ENV=$(RUN_ENV) bash hack/run-example.sh $(BIN)

#? lint: go vet, gofmt and golangci-lint (.golangci.yml: linters and the import layering)
lint: lint-tools
	$(GO) vet ./...
	$(GO) vet -tags faults ./internal/testutil/e2etest/ ./internal/app/ ./internal/schedule/
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@source $(LINT_ENV); "$$GOLANGCI_LINT" config verify && "$$GOLANGCI_LINT" run --build-tags faults ./...

# The environment every test step runs in: the provisioned tools, and
# DRIFTWATCH_E2E=1 (a missing tool fails instead of skipping).
TEST_ENV = source $(TOOLS_ENV); source $(KUBE_ENV); source $(S3_ENV); source $(IMAGE_ENV); source $(AUTH_ENV); source $(PG_ENV); \
	export DRIFTWATCH_E2E=1 DRIFTWATCH_TF_BINARIES="$$TF_BINARIES" DRIFTWATCH_TF_CLI_CONFIG="$$TF_CLI_CONFIG" \
	DRIFTWATCH_KUBE_BIN_DIR="$$KUBE_BIN_DIR" DRIFTWATCH_WEED="$$WEED" DRIFTWATCH_OAUTH2_PROXY="$$OAUTH2_PROXY" \
	DRIFTWATCH_PG_BIN_DIR="$$PG_BIN_DIR" \
	DOCKER_HOST="$$DOCKER_HOST" DRIFTWATCH_DOCKER="$$DOCKER" DRIFTWATCH_IMAGE=$(IMAGE) DRIFTWATCH_IMAGE_TOFU=$(IMAGE_TOFU)
# The fault-injection suite: TestFaults* in internal/testutil/e2etest, built with the
# faults tag; run on its own, after the rest, so its load (the soak keeps
# both cores busy) does not share the machine with other tests. Within it,
# the tests that mostly wait run beside the soak, two at a time
# (parallelBesideSoak in faults_main_test.go); -parallel is above the number
# of its parallel tests so that the soak never waits for a slot. -v prints
# the figures each test logs.
FAULTS_TEST = $(GO) test -race -count=1 -tags faults -run '^TestFaults' -parallel 32 -timeout 40m -v ./internal/testutil/e2etest/
# make test runs the soak for 3 minutes (a cold CI run stays under an
# hour); make test-faults for 10 (DRIFTWATCH_SOAK_DURATION sets either).
TEST_SOAK ?= 3m

#? provision: everything the tests need (deps and every *-tools target, the image), side by side (PROVISION_JOBS, 4), then the OpenTofu image
# The provisioners are independent: each keeps its own directory under
# $(DRIFTWATCH_TOOLS) behind its own lock, and apt is taken one client at a
# time (hack/lib.sh apt_lock). Side by side, a cold run overlaps the
# downloads (module proxy, Debian archive, debootstrap) with the builds.
# --output-sync keeps each one's output together.
PROVISION_JOBS ?= 4
provision:
	@$(MAKE) --no-print-directory -j$(PROVISION_JOBS) --output-sync=target deps tools kube-tools s3-tools auth-tools pg-tools lint-tools image
	@$(MAKE) --no-print-directory image TOOL=tofu

# The longest test packages, named first so that go test starts them first:
# the others fill the cores beside them, instead of these running last with
# a core idle (go test runs the packages in the order given, at most
# GOMAXPROCS at a time).
LONG_TEST_PACKAGES = ./internal/testutil/e2etest/ ./internal/testutil/kubetest/ ./internal/testutil/imagetest/

#? test: provision (side by side), lint, and run every test (unit + end-to-end) with -race, then the fault-injection suite
test: provision
	@$(MAKE) --no-print-directory lint
	@$(TEST_ENV); $(GO) test -race -count=1 -timeout 40m $(LONG_TEST_PACKAGES) ./...
	@$(TEST_ENV); cd internal/testutil/e2etest/testprovider && $(GO) test -count=1 ./...
	@$(TEST_ENV); DRIFTWATCH_SOAK_DURATION=$${DRIFTWATCH_SOAK_DURATION:-$(TEST_SOAK)} $(FAULTS_TEST)

#? test-short: unit tests only (go test -short): no tools provisioned, none used (meant to take under 3 minutes)
# -short skips every test of a real component (Terraform, the jail,
# Chromium, a cluster, SeaweedFS, oauth2-proxy, the image: tftest.Short),
# whether or not the tool is here; DRIFTWATCH_E2E is unset so that nothing
# missing is a failure.
test-short:
	env -u DRIFTWATCH_E2E $(GO) test -short -count=1 ./...

#? test-faults: only the fault-injection suite (DRIFTWATCH_SOAK_DURATION=10m by default)
test-faults: deps tools kube-tools s3-tools auth-tools pg-tools image
	@$(TEST_ENV); $(FAULTS_TEST)

#? testdata: regenerate the plan JSON fixtures from real Terraform
testdata: tools
	@source $(TOOLS_ENV); TF_CLI_CONFIG="$$TF_CLI_CONFIG" bash hack/gen-fixtures.sh

#? screenshots: render the README's screenshots (docs/screenshots) in headless Chromium
screenshots: deps
	DRIFTWATCH_E2E=1 DRIFTWATCH_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run '^TestScreenshots$$' ./internal/server/

#? bench: classifier and audit benchmarks (side-by-side ratios)
bench: tools
	@source $(TOOLS_ENV); DRIFTWATCH_TF_BINARIES="$$TF_BINARIES" DRIFTWATCH_TF_CLI_CONFIG="$$TF_CLI_CONFIG" \
	  $(GO) test -run '^$$' -bench . -benchmem ./bench/

#? bench-kube: the Kubernetes runner's sustained throughput against a real control plane (BENCH_DURATION, default 10m)
BENCH_DURATION ?= 10m
bench-kube: kube-tools
	@source $(KUBE_ENV); DRIFTWATCH_KUBE_BIN_DIR="$$KUBE_BIN_DIR" DRIFTWATCH_BENCH_DURATION=$(BENCH_DURATION) \
	  $(GO) test -run '^$$' -bench KubeThroughput -benchtime 1x -timeout 60m ./internal/runner/kube/

#? fuzz: fuzz the config and plan parsers for FUZZTIME each (default 60s)
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/terraform/planparse/
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./internal/config/

.PHONY: help provision deps tools kube-tools lint-tools s3-tools auth-tools pg-tools image-tools image build run lint test test-short test-faults testdata screenshots bench bench-kube fuzz
