#!/usr/bin/env bash
# Prints the folder of a Node 24 LTS `node` binary, fetched once per machine: CI runs on the Node the
# project declares (package.json engines) whatever Node the machine has. The official Node binaries come as
# the npm package node-linux-<arch> (`npm pack` checks the tarball against the registry's integrity hash);
# its bin/node is kept in ~/.cache/support-sync/node-<version>-<arch>/ (SUPPORT_SYNC_CACHE overrides the
# folder). Only the binary: npm stays the machine's, run by this node once it is first on PATH.
#
#   export PATH="$(bash scripts/node24.sh):$PATH"
set -euo pipefail

version=24.22.3
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *)
    echo "node24.sh: no Node binary package for $(uname -s) $(uname -m)" >&2
    exit 1
    ;;
esac
if [ "$(uname -s)" != Linux ]; then
  echo "node24.sh: the node-linux-$arch package serves Linux only (this is $(uname -s))" >&2
  exit 1
fi

dir="${SUPPORT_SYNC_CACHE:-$HOME/.cache/support-sync}/node-$version-$arch"
if [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/.ready" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "node24.sh: fetching node-linux-$arch@$version (first time on this machine) into $dir" >&2
  (cd "$work" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
  tar -xzf "$work/node-linux-$arch-$version.tgz" -C "$work" package/bin/node package/LICENSE
  rm -rf "$dir"
  mkdir -p "$dir/bin"
  mv "$work/package/bin/node" "$dir/bin/node"
  mv "$work/package/LICENSE" "$dir/LICENSE"
  got=$("$dir/bin/node" --version)
  if [ "$got" != "v$version" ]; then
    echo "node24.sh: $dir/bin/node says $got, not v$version" >&2
    exit 1
  fi
  date -u +%FT%TZ >"$dir/.ready"
fi
echo "$dir/bin"
