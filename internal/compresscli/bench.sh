#!/usr/bin/env bash
# BENCHMARK.md "CLI": one folder of 150 images (made from
# fixtures/images: PNG, JPEG, WebP and AVIF in nested folders, names with
# spaces), compressed against one `imgflow dev` three ways, in one run on
# the same machine:
#   1. imgflow compress --out DIR FOLDER
#   2. a curl loop: one POST /v1/jobs?wait=20 per file, then its file_url
#   3. the folder as one batch by hand: one JSON POST /v1/batches (base64
#      items), polled, then the archive downloaded and unzipped
# Content dedupe is off, so every method compresses (and is charged) for
# real. Prints a Markdown table: wall time, files/s, credits charged.
#
#   bash internal/compresscli/bench.sh            # N=150 by default
#   N=300 bash internal/compresscli/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-150}
tmp="$(mktemp -d)"
dev_pid=""
cleanup() {
  if [ -n "$dev_pid" ]; then kill -INT "$dev_pid" 2>/dev/null; wait "$dev_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
now() { date +%s.%N; }

go build -o "$tmp/imgflow" .
api_port=$(free_port)
up_port=$(free_port)
api="http://127.0.0.1:$api_port"
key="bench-cli-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
IMGFLOW_DEDUPE=off REDIS_URL= "$tmp/imgflow" dev --addr "127.0.0.1:$api_port" --upstream-addr "127.0.0.1:$up_port" \
  --demo-key "$key" --log-level warn >"$tmp/dev.log" 2>&1 &
dev_pid=$!
for _ in $(seq 300); do curl -sf "$api/health" >/dev/null && break; sleep 0.2; done
credits() {
  curl -s -X POST "http://127.0.0.1:$up_port/api/validate" -H 'Content-Type: application/json' -d "{\"api_key\":\"$key\"}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["credits_remaining"])'
}
# A key with room for three runs: 500 free credits, topped up.
"$tmp/imgflow" keys topup --redis "$(grep -o 'redis://[^ ]*' "$tmp/dev.log" | head -n1)" $((3 * N)) <<<"$key" >/dev/null 2>&1 ||
  echo "(top-up failed: the key has $(credits) credits)" >&2

# The folder: N files cycling through the samples, 10 to a subfolder.
folder="$tmp/photos"
samples=(photo.png photo.jpg photo.webp photo.avif screenshot.png screenshot.jpg screenshot.webp alpha.png alpha.webp exif-rotate-90.jpg)
for i in $(seq 0 $((N - 1))); do
  s=${samples[$((i % ${#samples[@]}))]}
  d="$folder/day $((i / 10))"
  mkdir -p "$d"
  cp "fixtures/images/$s" "$d/shot $i.${s##*.}"
done
bytes=$(du -sb "$folder" | cut -f1)
echo "folder: $N files, $((bytes / 1000)) KB, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

rows=()
measure() { # name, then the command
  local name="$1"
  shift
  local before t0 t1 after
  before=$(credits)
  t0=$(now)
  "$@"
  t1=$(now)
  # Credits are final once nothing is queued or running.
  after=$(credits)
  rows+=("$(python3 -c "import sys; n=$N; s=$t1-$t0; print(f'| {sys.argv[1]} | {s:.2f} s | {n/s:.1f} | {$before-$after} |')" "$name")")
}

cli() { IMGFLOW_API_KEY=$key "$tmp/imgflow" compress --api "$api" --out "$tmp/out-cli" "$folder" >/dev/null 2>"$tmp/cli.err"; }
curl_loop() {
  mkdir -p "$tmp/out-curl"
  find "$folder" -type f | while IFS= read -r f; do
    # grep, not a JSON parser: what a shell loop would do, no interpreter start per file.
    url=$(curl -s -X POST "$api/v1/jobs?wait=20" -H "X-API-Key: $key" -F "file=@\"$f\"" |
      grep -o '"file_url":"[^"]*"' | cut -d'"' -f4 | sed 's/\\u0026/\&/g')
    [ -n "$url" ] && curl -s -o "$tmp/out-curl/$(basename "$f")" "$url"
  done
}
one_batch() {
  python3 - "$folder" >"$tmp/batch.json" <<'EOF'
import base64, json, os, sys
items = []
for root, _, files in os.walk(sys.argv[1]):
    for f in sorted(files):
        with open(os.path.join(root, f), "rb") as r:
            items.append({"image_base64": base64.b64encode(r.read()).decode(), "filename": f})
json.dump({"items": items}, sys.stdout)
EOF
  id=$(curl -s -X POST "$api/v1/batches" -H "X-API-Key: $key" -H 'Content-Type: application/json' --data-binary @"$tmp/batch.json" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$api/v1/batches/$id?poll=1" -H "X-API-Key: $key")" = 200 ]; do sleep 0.2; done
  curl -s -o "$tmp/batch.zip" "$api/v1/batches/$id/archive" -H "X-API-Key: $key"
  mkdir -p "$tmp/out-batch" && unzip -q -o "$tmp/batch.zip" -d "$tmp/out-batch"
}

measure '`imgflow compress --out`' cli
measure 'curl loop (`POST /v1/jobs?wait=20` + `file_url`, one file at a time)' curl_loop
measure 'one batch by hand (JSON base64, poll, archive, unzip)' one_batch

echo "| method ($N files, $((bytes / 1000)) KB) | wall time | files/s | credits |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "written: cli $(find "$tmp/out-cli" -type f ! -name '.*' | wc -l), curl $(find "$tmp/out-curl" -type f | wc -l), batch $(find "$tmp/out-batch" -type f ! -name manifest.json | wc -l); load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
tail -n1 "$tmp/cli.err"
