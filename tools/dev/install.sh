#!/usr/bin/env bash
# Installs exactly the committed lockfile. `npm ci` is the first choice; it refuses the lockfile on
# this machine's registry mirror, which lacks other platforms' optional native binaries (the
# lockfile then records them without versions: @unrs/resolver-binding-*, for instance). The
# fallback `npm install --no-save` installs the same resolved tree from the same lockfile, and we
# check that the lockfile did not change.
set -euo pipefail
cd "$(dirname "$0")/../.."
log=$(mktemp)
if npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1; then rm -f "$log"; exit 0; fi
missing=$(grep -c 'Missing: .* from lock file' "$log" || true)
if [ "$missing" -eq 0 ]; then cat "$log" >&2; rm -f "$log"; exit 1; fi
echo "npm ci refused the lockfile ($missing optional platform binaries absent from this mirror); installing it with npm install --no-save" >&2
rm -f "$log"
npm install --no-audit --no-fund --no-save --loglevel=error
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
  git diff --quiet -- package-lock.json || { echo "the lockfile changed during install" >&2; exit 1; }
fi
