# kubepact-controller's image, for those with a container engine:
#
#   docker build -t ghcr.io/kubepact/kubepact-controller:$(cat VERSION) .
#
# hack/image.sh builds the same image without one (an OCI archive). Keep the
# two alike: static, stripped binaries, their version from VERSION, in an
# empty image, run as 65532:65532: the controller at /kubepact-controller,
# the entrypoint, the enrolment endpoint at /kubepact-enrolment, which its
# Deployment names as its command, and the kubepact CLI at /kubepact, which
# the chart's helm test hook names as its.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# The version the binary reports and the image's label: VERSION's content
# (a test checks they agree). Linked in with -ldflags, it wins over every
# other source of the version (package internal/version): this builds the
# release, so build it from the release's commit.
ARG VERSION=v0.2.0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
	-ldflags "-s -w -X main.version=${VERSION}" \
	-o /out/kubepact-controller ./cmd/kubepact-controller
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
	-ldflags "-s -w -X main.version=${VERSION}" \
	-o /out/kubepact-enrolment ./cmd/kubepact-enrolment
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
	-ldflags "-s -w -X main.version=${VERSION}" \
	-o /out/kubepact ./cmd/kubepact

FROM scratch
ARG VERSION=v0.2.0
LABEL org.opencontainers.image.version=$VERSION \
	org.opencontainers.image.source=https://github.com/kubepact/kubepact \
	org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/kubepact-controller /kubepact-controller
COPY --from=build /out/kubepact-enrolment /kubepact-enrolment
COPY --from=build /out/kubepact /kubepact
USER 65532:65532
ENTRYPOINT ["/kubepact-controller"]
