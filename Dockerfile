# syntax=docker/dockerfile:1
# imgflow: one image for every command (serve, work, upstream, keys, dev).
#   docker build -t imgflow .
#   docker run --rm imgflow version
# The compose file beside this one runs the whole system from it.

# Build: cgo is on because chai2010/webp compiles libwebp from C (the golang
# image carries gcc). libavif and libvips need no headers: they are bound at
# run time (purego, dlopen), so only the runtime stage installs them.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# The version is internal/version/VERSION, embedded; only the commit is stamped.
ARG COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.commit=${COMMIT}" -o /out/imgflow . \
 && /out/imgflow version

# Run: libavif15 for AVIF in the reference upstream, libvips42 (with libheif)
# for transforms (resize, convert, preserve, HEIC input), CA roots for https
# image URLs and callbacks, curl for the compose healthchecks. No shell tools are
# needed by imgflow itself; it runs as an unprivileged user.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libavif15 libvips42 curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin imgflow
COPY --from=build /out/imgflow /usr/local/bin/imgflow
USER 10001:10001
# 8080: the API (IMGFLOW_ADDR); 8081: the reference upstream (IMGFLOW_UPSTREAM_ADDR).
EXPOSE 8080 8081
ENV IMGFLOW_ADDR=:8080 IMGFLOW_UPSTREAM_ADDR=:8081
ENTRYPOINT ["imgflow"]
CMD ["serve"]
