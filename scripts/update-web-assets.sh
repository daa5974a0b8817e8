#!/usr/bin/env bash
# Vendors the UI's third-party assets into internal/web/static/vendor/ from pinned npm
# packages, so the Go build needs no Node and the page loads nothing from the internet.
# Run it to change a version (edit the pin below), then commit the vendored files; the
# printed checksums go in the commit message for review.
set -euo pipefail

UPLOT_VERSION=1.6.32

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/internal/web/static/vendor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "uplot@$UPLOT_VERSION" >/dev/null)
tar -xzf "$tmp/uplot-$UPLOT_VERSION.tgz" -C "$tmp"
mkdir -p "$dest"
cp "$tmp/package/dist/uPlot.iife.min.js" "$dest/uPlot.iife.min.js"
cp "$tmp/package/dist/uPlot.min.css" "$dest/uPlot.min.css"
cp "$tmp/package/LICENSE" "$dest/uPlot.LICENSE"
echo "uplot@$UPLOT_VERSION" >"$dest/VERSIONS"

cd "$dest"
sha256sum uPlot.iife.min.js uPlot.min.css uPlot.LICENSE
