#!/usr/bin/env bash
# Renders `strata report --html` in headless Chromium and saves a screenshot, to look at the
# page as a reader would (plots, tables, wrapped code).
#
#   scripts/report-screenshot.sh [OUT_DIR]     (default: target/report-screenshot)
#
# Tunes two small kernels into a fresh database (a matmul and a blur, a few seconds each),
# writes OUT_DIR/report.html and OUT_DIR/report.png (full page, 1280 px wide).
# Needs a release build of strata (built here if missing) and Chromium (Debian:
# `apt-get install chromium`). `cargo test` does not run this.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/report-screenshot}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
db="$out/report.db"
rm -f "$db" "$db-wal" "$db-shm"

browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
    echo "error: no chromium found (Debian: apt-get install chromium)" >&2
    exit 1
fi
cargo build --release --quiet
strata=target/release/strata

"$strata" tune examples/kernels/matmul.strata --shape M=128,N=128,K=128 --trials 40 \
    --min-time 0.02 --db "$db" >/dev/null
"$strata" tune examples/kernels/blur3x3.strata --shape H=256,W=256 --trials 25 \
    --min-time 0.02 --db "$db" >/dev/null
"$strata" report --db "$db" --html "$out/report.html" >/dev/null

# The page's height is not known before it is laid out: a tall window, then Chromium
# crops nothing (the PNG is as tall as the window; white below the page's end).
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1280,5200 --screenshot="$out/report.png" "file://$out/report.html" \
    2>/dev/null
echo "wrote $out/report.html and $out/report.png"
