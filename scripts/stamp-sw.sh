#!/usr/bin/env sh
# Trunk post-build hook: writes the build id (a hash of the built index.html, which names every hashed
# asset) into the service worker, so each build gets its own cache and old caches are cleaned up.
set -eu
dir="${TRUNK_STAGING_DIR:?run by trunk}"
id=$(cat "$dir/index.html" | sha256sum | cut -c1-16)
sed -i "s/__MEMOIRE_BUILD__/$id/" "$dir/sw.js"
