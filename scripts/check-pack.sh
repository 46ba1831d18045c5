#!/usr/bin/env bash
# The package as a user gets it: `npm pack` (its prepack builds dist/), the tarball installed into a fresh
# folder with its production dependencies only, and `npx support-sync --help` run there. Fails when the
# tarball misses the compiled CLI, when it ships sources or local state it must not (the TypeScript sources,
# the demo's .data/, tests), or when the installed command does not start.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

npm pack --silent --pack-destination "$work" >"$work/pack.out"
tarball="$work/$(tail -n 1 "$work/pack.out")"
[ -f "$tarball" ] || { echo "check-pack.sh: npm pack made no tarball ($(cat "$work/pack.out"))" >&2; exit 1; }

tar -tzf "$tarball" >"$work/files"
for needed in package/package.json package/dist/cli/main.js package/dist/examples/report-queries.yaml; do
  grep -qx "$needed" "$work/files" || { echo "check-pack.sh: the tarball lacks $needed" >&2; exit 1; }
done
if grep -E '^package/(\.data/|test/|node_modules/|cli/|\.ci/)|\.ts$' "$work/files" | grep -v '\.d\.ts$' >"$work/unwanted"; then
  echo "check-pack.sh: the tarball ships files a user must not get:" >&2
  head -n 20 "$work/unwanted" >&2
  exit 1
fi

mkdir "$work/user"
cd "$work/user"
npm init -y >/dev/null
npm install --no-audit --no-fund --omit=dev "$tarball" >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  exit 1
}
npx --no-install support-sync --help >"$work/help.out"
grep -q '^Usage: support-sync' "$work/help.out" || {
  echo "check-pack.sh: npx support-sync --help printed no usage:" >&2
  cat "$work/help.out" >&2
  exit 1
}
echo "check-pack.sh: $(basename "$tarball") ($(wc -l <"$work/files") files) installs, and npx support-sync --help works"
