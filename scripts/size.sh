#!/usr/bin/env bash
# Where the app's wasm bytes go, per part of the split build (scripts/build-wasm.sh): every shipped
# wasm file (the main one the first screen loads, each split point's chunk, the shared chunks) with
# its brotli size, the bundle figures of scripts/bench.sh, and for the main wasm and each split point's
# chunk: by crate (memoire by module), the largest functions, the data section, by area (what the first
# screen needs against import, sync, memory and backup), and, when twiggy is installed, the generic
# functions of the main wasm with the most monomorphised copies.
# Usage: scripts/size.sh [--no-build]
#   Builds dist/ (trunk build --release) unless --no-build, then runs wasm-opt again on the same parts
#   (target/split) with names kept (-g), so the figures are those of the shipped wasm with names.
#   Sizes are uncompressed bytes of function bodies; brotli of each whole file is printed for reference.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
unset NO_COLOR
[ "${1:-}" = --no-build ] || trunk build --release >/dev/null
parts=target/split
out=target/size
mkdir -p "$out"
# Same flags as scripts/build-wasm.sh's WASM_OPT_FLAGS, plus -g to keep the name section.
named() {
  wasm-opt -Os -g --flatten --rereloop -Os --reorder-functions-by-name --strip-producers \
    --strip-target-features --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    "$1" -o "$2"
}
br() { brotli -c -q 11 "$1" | wc -c; }
echo "shipped wasm (raw bytes, brotli -q 11):"
for f in dist/*.wasm; do printf '  %9d  brotli %7d  %s\n' "$(wc -c <"$f")" "$(br "$f")" "$(basename "$f")"; done
# The figures of #16 (scripts/bench.sh prints them too): every file, and what the first visit loads.
total=0
for f in dist/*.wasm dist/*.js dist/*.css dist/index.html; do [ -f "$f" ] && total=$((total + $(br "$f"))); done
first=$(br dist/index.html)
for f in $(grep -oE '\./[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(js|wasm|css)' dist/index.html | sed 's#^\./#dist/#' | sort -u); do
  first=$((first + $(br "$f")))
done
echo "bundle_total_brotli $total bytes (every file, chunks included: all a user has downloaded once every part was used)"
echo "bundle_first_load_brotli $first bytes (index.html and what it names: before the app is usable; goal, #31: no more than 400,000)"

named "$parts/bindgen/memoire_bg.wasm" "$out/named.wasm"
echo; echo "=== main wasm (the first screen) ==="
python3 scripts/wasm_size.py "$out/named.wasm" --depth2 --areas
for f in "$parts"/split/split_*.wasm; do
  name=$(basename "$f" .wasm)
  named "$f" "$out/$name.wasm"
  echo; echo "=== chunk ${name#split_} (fetched on first use) ==="
  python3 scripts/wasm_size.py "$out/$name.wasm" --areas | sed -n '/^by area/,$p'
done
# twiggy (cargo install twiggy), when installed: the generic functions with the most copies.
if command -v twiggy >/dev/null; then echo; twiggy monos -g -m 20 "$out/named.wasm" | cut -c1-200; fi
