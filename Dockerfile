# driftwatch image: a static driftwatch binary plus a pinned, checksum-verified
# Terraform. The runtime is debian-slim rather than distroless because git
# sources (and Terraform's own git:: module sources) need the git CLI.
#
#   docker build -t driftwatch .       Terraform from releases.hashicorp.com
#   make image                         offline: base images assembled locally
#                                      (hack/provision-image.sh), Terraform from
#                                      the build context (TERRAFORM_SOURCE=context)
#
# It needs BuildKit (any docker with buildx, or Debian's docker.io CLI with
# DOCKER_BUILDKIT=1): only the selected Terraform stage is built, and the Go
# module and build caches persist between builds. No `# syntax=` line: that
# would pull a frontend image, which an offline build cannot.
#
# The image runs as uid 65532 and works with a read-only root filesystem:
# mount writable volumes (emptyDir, tmpfs) on /tmp, on HOME
# (/home/driftwatch: git cache, .terraform.d), on the plugin cache and on
# the work and data directories.

# Base images are pinned by digest (a tag can be re-pointed under us); a
# build that has its own copies (a mirror, an offline build) passes
# --build-arg BUILD_IMAGE=... / RUNTIME_IMAGE=... instead. Update tag and
# digest together.
ARG BUILD_IMAGE=golang:1.26-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d
ARG RUNTIME_IMAGE=debian:bookworm-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251
# Where Terraform comes from: "download" (its release zip, checksum-verified)
# or "context": bin/image/terraform in the build context (a binary you built
# or mirrored yourself; `make image` puts one there).
ARG TERRAFORM_SOURCE=download

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
ENV GOMODCACHE=/go/pkg/mod GOCACHE=/root/.cache/go-build
COPY go.mod go.sum ./
RUN --mount=type=cache,id=driftwatch-gomod,target=/go/pkg/mod go mod download
COPY cmd ./cmd
COPY internal ./internal
ARG VERSION=dev
RUN --mount=type=cache,id=driftwatch-gomod,target=/go/pkg/mod \
    --mount=type=cache,id=driftwatch-gobuild,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/driftwatch/driftwatch/internal/version.Version=${VERSION}" \
      -o /out/driftwatch ./cmd/driftwatch

FROM ${RUNTIME_IMAGE} AS terraform-download
ARG TERRAFORM_VERSION=1.11.4
# sha256 of terraform_${TERRAFORM_VERSION}_linux_amd64.zip; change both together.
ARG TERRAFORM_SHA256=1ce994251c00281d6845f0f268637ba50c0005657eb3cf096b92f753b42ef4dc
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl unzip \
 && curl -fsSLo /tmp/terraform.zip \
      "https://releases.hashicorp.com/terraform/${TERRAFORM_VERSION}/terraform_${TERRAFORM_VERSION}_linux_amd64.zip" \
 && echo "${TERRAFORM_SHA256}  /tmp/terraform.zip" | sha256sum -c - \
 && unzip -d /out /tmp/terraform.zip terraform

FROM scratch AS terraform-context
COPY bin/image/terraform /out/terraform

FROM terraform-${TERRAFORM_SOURCE} AS terraform

FROM ${RUNTIME_IMAGE}
# bubblewrap: where the container may create user namespaces, local runs
# (runner.mode local, audit) are jailed from the daemon and each other
# (terraform.sandbox); passt (pasta): each local run gets a network namespace
# of its own, outbound access only, no port of the container (the daemon's
# API among them; terraform.sandbox_network); in Kubernetes mode each run's
# pod is its sandbox.
# ca-certificates: HTTPS git sources and providers; git: git sources and
# Terraform's git:: module sources.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git bubblewrap passt \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && useradd --uid 65532 --user-group --home-dir /home/driftwatch --create-home driftwatch
COPY --from=terraform /out/terraform /usr/local/bin/terraform
COPY --from=build /out/driftwatch /usr/local/bin/driftwatch
ARG VERSION=dev
LABEL org.opencontainers.image.title=driftwatch \
      org.opencontainers.image.version=${VERSION}
USER 65532:65532
ENV HOME=/home/driftwatch
WORKDIR /home/driftwatch
ENTRYPOINT ["/usr/local/bin/driftwatch"]
CMD ["audit", "--config", "/etc/driftwatch/driftwatch.yaml"]
