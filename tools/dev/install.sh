#!/usr/bin/env bash
# Installs exactly the committed lockfile. `npm ci` is the first choice; it refuses the lockfile on
# this machine's registry mirror, which lacks other platforms' optional native binaries (the
# lockfile then records them without versions: @unrs/resolver-binding-*, for instance). The
# fallback `npm install --no-save` installs the same resolved tree from the same lockfile, and we
# check that the lockfile did not change. --prefer-offline: what npm's cache holds is taken without
# asking the registry whether it is still current (the lockfile pins every tarball by its integrity
# anyway); a cold cache still fetches. A fresh clone's `npm ci` took 57.6 and 57.7 s with it against
# 65.4 and 77.1 s without, alternating, the same tree installed.
#
# A fresh clone on a machine that installed the same lockfile before links that install instead
# (a few seconds against 35 to 60): each finished install is copied once per machine user, outside any
# checkout, under `$FLAGSHIP_TOOLS_CACHE` or `${XDG_CACHE_HOME:-~/.cache}/flagship-tools` as
# fetch-pinned.mjs keeps its binaries, keyed by the lockfile, what an install reads of package.json
# (dependencies, overrides, install scripts), this script, Node's version and the platform. A checkout
# gets hard links to its files (a copy took 22 s on a busy machine), so a file written in place in one
# checkout's node_modules would change the kept one: a kept install with any file newer than its
# `kept` mark is thrown away, not used. FLAGSHIP_INSTALL_CACHE=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/../.."

cache=""
if [ "${FLAGSHIP_INSTALL_CACHE:-1}" != 0 ] && [ ! -e node_modules ]; then
  # Of package.json, what an install reads (a change to another script keeps the install).
  key=$( (cat package-lock.json tools/dev/install.sh; node -p 'const p = require("./package.json"); JSON.stringify([p.dependencies, p.devDependencies, p.optionalDependencies, p.peerDependencies, p.overrides, p.workspaces, ...["preinstall", "install", "postinstall", "prepare"].map((s) => p.scripts?.[s])]) + process.version + process.platform + process.arch') | sha256sum | cut -c1-16)
  cache="${FLAGSHIP_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flagship-tools}/node_modules-$key"
  # Kept only once complete (renamed into place after the copy), so a directory there is a whole install.
  if [ -d "$cache/node_modules" ] && [ -n "$(find "$cache/node_modules" -newer "$cache/kept" -print -quit 2>/dev/null || echo changed)" ]; then
    echo "the kept install at $cache changed after it was kept; installing from the lockfile" >&2
    rm -rf "$cache"
  fi
  if [ -d "$cache/node_modules" ]; then
    rm -rf node_modules.partial
    cp -al "$cache/node_modules" node_modules.partial && mv node_modules.partial node_modules
    echo "node_modules linked from $cache (the same lockfile, Node and platform)"
    exit 0
  fi
fi
keep() {
  [ -n "$cache" ] || return 0
  mkdir -p "$(dirname "$cache")"
  local staging
  staging=$(mktemp -d "$(dirname "$cache")/staging.XXXXXX")
  if cp -a node_modules "$staging/node_modules" && touch "$staging/kept" && mv -T "$staging" "$cache" 2>/dev/null; then
    # The two newest installs are kept (1.2 GB each): a branch with another lockfile does not evict main's.
    find "$(dirname "$cache")" -maxdepth 1 -name 'node_modules-*' -printf '%T@ %p\n' | sort -rn | tail -n +3 | cut -d' ' -f2- | xargs -r rm -rf
    return 0
  fi
  rm -rf "$staging"
}

log=$(mktemp)
if npm ci --no-audit --no-fund --prefer-offline --loglevel=error >"$log" 2>&1; then rm -f "$log"; keep; exit 0; fi
missing=$(grep -c 'Missing: .* from lock file' "$log" || true)
if [ "$missing" -eq 0 ]; then cat "$log" >&2; rm -f "$log"; exit 1; fi
echo "npm ci refused the lockfile ($missing optional platform binaries absent from this mirror); installing it with npm install --no-save" >&2
rm -f "$log"
npm install --no-audit --no-fund --no-save --prefer-offline --loglevel=error
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
  git diff --quiet -- package-lock.json || { echo "the lockfile changed during install" >&2; exit 1; }
fi
keep
