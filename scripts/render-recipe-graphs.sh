#!/bin/sh
# Draws each recipe's graph as a PNG for docs/recipes.md, with the Mermaid CLI
# (npm @mermaid-js/mermaid-cli, not a dependency: MMDC names it) on a headless
# Chromium (PUPPETEER_CONFIG: a JSON file with its executablePath and args).
# Usage: MMDC=/path/to/mmdc PUPPETEER_CONFIG=puppeteer.json scripts/render-recipe-graphs.sh
set -eu
cd "$(dirname "$0")/.."
: "${MMDC:?set MMDC to the mmdc executable}"
tmp=$(mktemp -d)
for file in pipelines/*.yaml; do
  name=$(basename "$file" .yaml)
  node dist/cli.cjs graph "$file" > "$tmp/$name.mmd"
  "$MMDC" ${PUPPETEER_CONFIG:+-p "$PUPPETEER_CONFIG"} -i "$tmp/$name.mmd" -o "docs/graphs/$name.png" -b white -w 1200 -s 1 >/dev/null
  echo "docs/graphs/$name.png"
done
rm -rf "$tmp"
