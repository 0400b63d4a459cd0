#!/usr/bin/env bash
# Transforms side by side with the libvips and libheif tools, in one
# run, on photos generated here (nothing large is committed):
#   connector/imaging/bench.sh [RUNS]     (from anywhere; RUNS defaults to 5)
# Needs vips, vipsthumbnail (libvips-tools), heif-enc and heif-convert
# (libheif-examples), exiftool, and /usr/bin/time. Prints median wall time
# and peak RSS per command, each run as its own process (the imaging test
# binary in its one-shot mode: benchhelper_test.go), and PSNRs.
set -euo pipefail
runs="${1:-5}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"

echo "== generating a 24 MP JPEG (6000x4000) and a 12 MP HEIC (4000x3000)"
vips resize "$root/fixtures/images/photo.jpg" up.v 18.75
vips extract_area up.v crop.v 0 0 6000 4000
vips gaussnoise noise.v 6000 4000 --sigma 6 --mean 0
vips bandjoin "noise.v noise.v noise.v" noise3.v
vips add crop.v noise3.v sum.v
vips cast sum.v "big.jpg[Q=92]" uchar
exiftool -q -overwrite_original -Copyright='(c) bench' -DateTimeOriginal='2024:06:01 12:34:56' \
  -GPSLatitude=48.8584 -GPSLatitudeRef=N -Orientation#=1 big.jpg
vips thumbnail big.jpg heic-src.png 4000 --height 3000 --crop centre
heif-enc -q 85 -o big.heic heic-src.png >/dev/null
ls -l big.jpg big.heic | awk '{print "   " $9 ": " $5 " bytes"}'
echo "   $(vipsheader big.jpg); $(vipsheader big.heic)"

(cd "$root" && go test -c -o "$dir/imaging.test" ./connector/imaging)

# measure LABEL CMD...: median wall time and the largest peak RSS of RUNS runs.
measure() {
  local label="$1"; shift
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %M' -o t.txt "$@" >/dev/null 2>&1
    cat t.txt
  done | sort -n | awk -v l="$label" '{t[NR]=$1; if ($2>m) m=$2} END {printf "| %s | %.0f | %.1f |\n", l, t[int((NR+1)/2)]*1000, m/1024}'
}
imaging() { IMAGING_BENCH="$*" ./imaging.test; }
export -f imaging

echo
echo "| Command | median ms | peak RSS MiB |"
echo "|---|---:|---:|"
measure "vipsthumbnail big.jpg -s 1600x -o out.jpg[Q=95,strip]" vipsthumbnail big.jpg -s 1600x -o 'vt.jpg[Q=95,strip]'
measure "imgflow resize 1600x (JPEG Q95 intermediate)" env IMAGING_BENCH="transform big.jpg ours.jpg 1600x -" ./imaging.test
measure "heif-convert -q 95 big.heic out.jpg" heif-convert -q 95 big.heic hc.jpg
measure "imgflow HEIC -> JPEG (Q95)" env IMAGING_BENCH="transform big.heic ours-heic.jpg - -" ./imaging.test
measure "imgflow HEIC -> JPEG, resize 1600x" env IMAGING_BENCH="transform big.heic ours-heic-small.jpg 1600x -" ./imaging.test

echo
echo "== quality of the final result (after the reference upstream's JPEG compression) against the lossless path"
IMAGING_BENCH="transform big.jpg ref.png 1600x image/png" ./imaging.test           # the resized pixels, lossless
IMAGING_BENCH="transform ref.png q100.jpg - image/jpeg" ./imaging.test 2>/dev/null || true
vips copy ref.png "q100.jpg[Q=100,strip]"                                          # the nearest to lossless the API takes
IMAGING_BENCH="upstream ours.jpg final.jpg" ./imaging.test
IMAGING_BENCH="upstream q100.jpg final-q100.jpg" ./imaging.test
echo "| Image | bytes | PSNR vs lossless resize (dB) |"
echo "|---|---:|---:|"
for f in ours.jpg q100.jpg final.jpg final-q100.jpg; do
  printf '| %s | %s | %s |\n' "$f" "$(stat -c %s "$f")" "$(IMAGING_BENCH="psnr ref.png $f" ./imaging.test)"
done
echo "(ours.jpg: imgflow's intermediate, Q95; q100.jpg: a Q100 intermediate; final*.jpg: what the upstream returns for each)"
