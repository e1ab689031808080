#!/usr/bin/env bash
# Installs exactly the committed lockfile. `npm ci` is the first choice; it can fail on this
# machine's registry mirror when the lockfile records other platforms' optional native binaries
# (nx's, for instance) without versions, so `npm install --no-save` from the same lockfile is the
# fallback: it installs the same resolved tree and leaves package-lock.json untouched.
set -euo pipefail
cd "$(dirname "$0")/../.."
if npm ci --no-audit --no-fund --loglevel=error; then exit 0; fi
echo "npm ci failed; installing from the lockfile with npm install --no-save" >&2
npm install --no-audit --no-fund --no-save --loglevel=error
git diff --quiet -- package-lock.json || { echo "the lockfile changed during install" >&2; exit 1; }
