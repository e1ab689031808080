#!/bin/sh
# Lays out an image's dist/ from the build's: docker/Dockerfile's build stage runs it (into /out,
# which the runtime stage copies to /app/dist), and tools/dev/deploy.e2e-spec.ts runs it to start
# each image's command here from the same files.
#   sh docker/image-layout.sh <app> <the build's dist directory> <out directory>
# The app's compiled tree, and beside it the entry files the image's commands name: dist/main.js
# (the CMD), dist/migrate.js and dist/seed.js when the app has them (compose's migrate and seed).
# management-api's image also carries the built web console, where CONSOLE_DIR's default finds it
# (dist/apps/console under /app).
set -eu
app=$1 dist=$2 out=$3
[ -d "$dist/apps/$app" ] || { echo "$dist/apps/$app is not built" >&2; exit 1; }
mkdir -p "$out"
cp -r "$dist/apps/$app/." "$out/"
printf "require('./apps/%s/src/main.js');\n" "$app" > "$out/main.js"
for f in migrate seed; do
  if [ -f "$out/apps/$app/src/$f.js" ]; then printf "require('./apps/%s/src/%s.js');\n" "$app" "$f" > "$out/$f.js"; fi
done
if [ "$app" = management-api ]; then cp -r "$dist/apps/console" "$out/apps/console"; fi
