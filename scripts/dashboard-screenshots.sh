#!/usr/bin/env bash
# Takes the screenshots of riotd's dashboard in docs/dashboard/ (shown by
# docs/dashboard.md): builds riotd and riot-worker, runs them on loopback
# with two workers and a sample job, and saves each page as a PNG. Needs
# Chromium (apt-get install chromium, or RIOT_CHROMIUM=/path/to/chrome).
#
#   scripts/dashboard-screenshots.sh [OUT-DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/shots -out "${1:-docs/dashboard}"
