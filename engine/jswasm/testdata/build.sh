#!/bin/sh
# Builds the test modules from their text (Debian: apt-get install wabt).
set -e
cd "$(dirname "$0")"
for f in api plain big grow; do
  wat2wasm "$f.wat" -o "$f.wasm"
done
