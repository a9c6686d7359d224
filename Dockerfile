# driftwatch image: a static driftwatch binary plus one pinned,
# checksum-verified tool: Terraform (TOOL=terraform, the default) or OpenTofu
# (TOOL=tofu). The runtime is debian-slim rather than distroless because git
# sources (and the tool's own git:: module sources) need the git CLI.
#
#   docker build -t driftwatch .            Terraform from releases.hashicorp.com
#   docker build -t driftwatch:tofu --build-arg TOOL=tofu \
#     --build-arg TOFU_SHA256=<sha256 of tofu_<version>_linux_amd64.zip> .
#                                           OpenTofu from its GitHub release
#   make image [TOOL=tofu]                  offline: base images assembled locally
#                                           (hack/provision-image.sh), the tool from
#                                           the build context (TOOL_SOURCE=context)
#
# The image holds one tool, never both: with no terraform.binary set,
# driftwatch runs terraform, else tofu, from PATH, so the same configuration
# (and the chart's) works with either image. The labels
# io.github.driftwatch.tool and io.github.driftwatch.tool.version say which.
#
# It needs BuildKit (any docker with buildx, or Debian's docker.io CLI with
# DOCKER_BUILDKIT=1): only the selected tool's stages are built, and the Go
# module and build caches persist between builds. No `# syntax=` line: that
# would pull a frontend image, which an offline build cannot. The two
# variants share every layer but the tool's: building the second one after
# the first costs the tool's copy.
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
# The tool: "terraform" or "tofu" (anything else fails: no stage runtime-<TOOL>).
ARG TOOL=terraform
# Where it comes from: "download" (its release zip, checksum-verified) or
# "context": bin/image/<TOOL> in the build context (a binary you built or
# mirrored yourself; `make image` puts one there). With "context", pass the
# binary's version as TERRAFORM_VERSION or TOFU_VERSION: it labels the image.
ARG TOOL_SOURCE=download
# Each tool's version and the sha256 of its linux_amd64 release zip; change
# both together.
ARG TERRAFORM_VERSION=1.11.4
ARG TERRAFORM_SHA256=1ce994251c00281d6845f0f268637ba50c0005657eb3cf096b92f753b42ef4dc
ARG TOFU_VERSION=1.10.6
# No default: this Dockerfile was written where OpenTofu's release assets
# could not be reached, so the zip's checksum could not be checked here and
# none is pinned. Take it from the release's tofu_<version>_SHA256SUMS (after
# verifying that file's signature) and pass it; the download stage refuses
# to run without it.
ARG TOFU_SHA256=

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

# --- the tool: <TOOL>-<TOOL_SOURCE> leaves it at /out/<TOOL> ------------------
FROM ${RUNTIME_IMAGE} AS fetch
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl unzip

FROM fetch AS terraform-download
ARG TERRAFORM_VERSION
ARG TERRAFORM_SHA256
RUN curl -fsSLo /tmp/terraform.zip \
      "https://releases.hashicorp.com/terraform/${TERRAFORM_VERSION}/terraform_${TERRAFORM_VERSION}_linux_amd64.zip" \
 && echo "${TERRAFORM_SHA256}  /tmp/terraform.zip" | sha256sum -c - \
 && unzip -d /out /tmp/terraform.zip terraform

FROM fetch AS tofu-download
ARG TOFU_VERSION
ARG TOFU_SHA256
RUN test -n "${TOFU_SHA256}" || { echo "TOOL=tofu needs --build-arg TOFU_SHA256=<sha256 of tofu_${TOFU_VERSION}_linux_amd64.zip> (or TOOL_SOURCE=context)" >&2; exit 1; } \
 && curl -fsSLo /tmp/tofu.zip \
      "https://github.com/opentofu/opentofu/releases/download/v${TOFU_VERSION}/tofu_${TOFU_VERSION}_linux_amd64.zip" \
 && echo "${TOFU_SHA256}  /tmp/tofu.zip" | sha256sum -c - \
 && unzip -d /out /tmp/tofu.zip tofu

FROM scratch AS terraform-context
COPY bin/image/terraform /out/terraform

FROM scratch AS tofu-context
COPY bin/image/tofu /out/tofu

FROM ${TOOL}-${TOOL_SOURCE} AS tool

# --- the runtime: shared by both variants up to the tool --------------------
FROM ${RUNTIME_IMAGE} AS runtime
# bubblewrap: where the container may create user namespaces, local runs
# (runner.mode local, audit) are jailed from the daemon and each other
# (terraform.sandbox); passt (pasta): each local run gets a network namespace
# of its own, outbound access only, no port of the container (the daemon's
# API among them; terraform.sandbox_network); in Kubernetes mode each run's
# pod is its sandbox.
# ca-certificates: HTTPS git sources and providers; git: git sources and
# the tool's git:: module sources.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git bubblewrap passt \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && useradd --uid 65532 --user-group --home-dir /home/driftwatch --create-home driftwatch

FROM runtime AS runtime-terraform
ARG TERRAFORM_VERSION
LABEL io.github.driftwatch.tool=terraform \
      io.github.driftwatch.tool.version=${TERRAFORM_VERSION}

FROM runtime AS runtime-tofu
ARG TOFU_VERSION
LABEL io.github.driftwatch.tool=tofu \
      io.github.driftwatch.tool.version=${TOFU_VERSION}

FROM runtime-${TOOL}
COPY --from=tool /out/ /usr/local/bin/
COPY --from=build /out/driftwatch /usr/local/bin/driftwatch
ARG VERSION=dev
LABEL org.opencontainers.image.title=driftwatch \
      org.opencontainers.image.version=${VERSION}
USER 65532:65532
ENV HOME=/home/driftwatch
WORKDIR /home/driftwatch
ENTRYPOINT ["/usr/local/bin/driftwatch"]
CMD ["audit", "--config", "/etc/driftwatch/driftwatch.yaml"]
