#!/bin/sh
# Builds scripts/wasm/dict.wasm from dict.wat (Debian: apt-get install wabt).
# The built module is committed: running the scripts needs no toolchain.
set -e
cd "$(dirname "$0")"
wat2wasm dict.wat -o dict.wasm
