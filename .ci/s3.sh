#!/usr/bin/env bash
# The S3 blob-store tests (connector/s3blob, internal/system, scale_test.go) start versitygw, a
# real S3-compatible server, on loopback. Build it once into $GOBIN (or
# $GOPATH/bin), where internal/s3test finds it; without it those tests skip.
# Compiling takes about 2 min of CPU; on a cold module cache the downloads
# (aws-sdk-go-v2, fiber, ...) come first. Bounded to 10 min so that a slow
# proxy cannot sink the CI run: the S3 tests then skip and say why. Nothing
# to do when versitygw is already there.
set -euo pipefail
bin="$(go env GOBIN)"
[ -n "$bin" ] || bin="$(go env GOPATH)/bin"
if command -v versitygw >/dev/null 2>&1 || [ -x "$bin/versitygw" ]; then
  echo "== versitygw already installed"
  exit 0
fi
echo "== go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 (S3 server for the blob-store tests)"
start=$SECONDS
if timeout 600 go install github.com/versity/versitygw/cmd/versitygw@v1.8.0; then
  echo "   built in $((SECONDS - start)) s"
else
  echo "   versitygw not built within 10 min: the S3 tests will skip"
fi
