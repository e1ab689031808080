#!/usr/bin/env bash
# Writes the Nx project.json, tsconfig.json and jest.config.js of one project.
# usage: tools/dev/gen-project.sh apps|libs NAME "tags,comma,separated"
set -euo pipefail
kind=$1 name=$2 tags=$3
dir="$kind/$name"
mkdir -p "$dir/src"
tagjson=$(printf '%s' "$tags" | awk -F, '{for(i=1;i<=NF;i++){printf "%s\"%s\"", (i>1?",":""), $i}}')
# One Jest target per test layer (STYLE.md): `test` is the unit layer Nx caches; int-test and e2e need
# Postgres, Redis or started apps. The same shape as every project.json in the tree.
jest_target() { printf '"%s": { "executor": "nx:run-commands", "options": { "command": "jest --ci -c %s/jest.config.js --passWithNoTests", "env": { "TEST_KIND": "%s" } } }' "$1" "$dir" "$2"; }
common_targets="$(jest_target test unit),
    $(jest_target int-test int),
    $(jest_target e2e e2e),"'
    "lint": { "executor": "nx:run-commands", "options": { "command": "eslint --max-warnings=0 '"$dir"'" } },
    "typecheck": { "executor": "nx:run-commands", "options": { "command": "node node_modules/typescript-7/bin/tsc -p '"$dir"'/tsconfig.json --noEmit" } }'
if [ "$kind" = apps ]; then
  type=application
  targets='"build": { "executor": "nx:run-commands", "options": { "command": "node node_modules/typescript-7/bin/tsc -p '"$dir"'/tsconfig.app.json && tsc-alias -p tsconfig.base.json --outDir dist/'"$dir"'" } },
    "serve": { "executor": "nx:run-commands", "dependsOn": ["build"], "options": { "command": "node dist/'"$dir"'/'"$dir"'/src/main.js" } },
    '"$common_targets"
  cat > "$dir/tsconfig.app.json" <<JSON
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": { "outDir": "../../dist/$dir", "noEmit": false },
  "include": ["src/**/*.ts"],
  "exclude": ["src/**/*.spec.ts", "src/**/*.int-spec.ts", "src/**/*.e2e-spec.ts", "src/**/*.fake.ts", "src/**/*.fixture.ts"]
}
JSON
else
  type=library
  targets="$common_targets"
fi
cat > "$dir/project.json" <<JSON
{
  "name": "$name",
  "\$schema": "../../node_modules/nx/schemas/project-schema.json",
  "sourceRoot": "$dir/src",
  "projectType": "$type",
  "tags": [$tagjson],
  "targets": {
    $targets
  }
}
JSON
cat > "$dir/tsconfig.json" <<JSON
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": { "noEmit": true, "types": ["node", "jest"] },
  "include": ["src/**/*.ts"]
}
JSON
[ -f "$dir/jest.config.js" ] || echo "module.exports = require('../../jest.preset.js')(__dirname);" > "$dir/jest.config.js"
