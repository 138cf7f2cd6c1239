#!/usr/bin/env sh
# Trunk post-build hook: writes the build id into the service worker, so each build gets its own cache
# and the old caches are cleaned up. The id hashes every built file (index.html names the hashed
# js/wasm/css; the manifest, icons and sw.js itself are not hashed by name), so any change to what the
# service worker precaches gives a new id. Usage outside Trunk: TRUNK_STAGING_DIR=dist sh scripts/stamp-sw.sh
set -eu
dir="${TRUNK_STAGING_DIR:?run by trunk (or set TRUNK_STAGING_DIR to the built directory)}"
sw="$dir/sw.js"
grep -q "__MEMOIRE_BUILD__" "$sw" || { echo "stamp-sw: no __MEMOIRE_BUILD__ placeholder in $sw" >&2; exit 1; }
id=$(cd "$dir" && find . -type f -print | LC_ALL=C sort | while IFS= read -r f; do printf '%s\n' "$f"; cat "$f"; done | sha256sum | cut -c1-16)
sed -i "s/__MEMOIRE_BUILD__/$id/g" "$sw"
echo "stamp-sw: build $id"
