# syntax=docker/dockerfile:1
# driftwatch image: a static driftwatch binary plus a pinned, checksum-verified
# Terraform. The runtime is debian-slim rather than distroless because git
# sources (and Terraform's own git:: module sources) need the git CLI.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/driftwatch/driftwatch/internal/version.Version=${VERSION}" \
      -o /out/driftwatch ./cmd/driftwatch

FROM debian:bookworm-slim AS terraform
ARG TERRAFORM_VERSION=1.11.4
# sha256 of terraform_${TERRAFORM_VERSION}_linux_amd64.zip; change both together.
ARG TERRAFORM_SHA256=1ce994251c00281d6845f0f268637ba50c0005657eb3cf096b92f753b42ef4dc
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl unzip \
 && curl -fsSLo /tmp/terraform.zip \
      "https://releases.hashicorp.com/terraform/${TERRAFORM_VERSION}/terraform_${TERRAFORM_VERSION}_linux_amd64.zip" \
 && echo "${TERRAFORM_SHA256}  /tmp/terraform.zip" | sha256sum -c - \
 && unzip -d /out /tmp/terraform.zip terraform

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --home-dir /home/driftwatch --create-home driftwatch
COPY --from=terraform /out/terraform /usr/local/bin/terraform
COPY --from=build /out/driftwatch /usr/local/bin/driftwatch
USER 65532:65532
WORKDIR /home/driftwatch
ENTRYPOINT ["/usr/local/bin/driftwatch"]
CMD ["audit", "--config", "/etc/driftwatch/driftwatch.yaml"]
