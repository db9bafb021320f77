#!/usr/bin/env bash
# Vendors uPlot (https://github.com/leeoniya/uPlot, MIT) into riotd's
# dashboard: fetches the npm package and copies its built files and licence
# into tracker/dashboard/static/vendor/uplot/. `go build` needs nothing but
# what this copies, which is committed.
#
#   scripts/update-uplot.sh            # the latest release
#   scripts/update-uplot.sh 1.6.32     # a given version
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-latest}
dest=tracker/dashboard/static/vendor/uplot
command -v npm >/dev/null || { echo "update-uplot: needs npm (apt-get install npm)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null)
tar -xzf "$tmp"/uplot-*.tgz -C "$tmp"
pkg=$tmp/package
got=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg/package.json" | head -n1)

mkdir -p "$dest"
cp "$pkg/dist/uPlot.iife.min.js" "$pkg/dist/uPlot.min.css" "$pkg/LICENSE" "$dest/"
echo "$got" >"$dest/VERSION"
echo "update-uplot: uPlot $got in $dest"
