#!/usr/bin/env bash
# `npm ci`, tolerating one gap of this machine's npm registry: it does not serve other platforms' builds of
# some optional packages (e.g. @biomejs/cli-darwin-arm64), so the lockfile cannot list them and npm 11's
# `npm ci` refuses the lockfile ("Missing: @biomejs/cli-android-arm64@ from lock file" — note the empty
# version: the package cannot be resolved at all). Only in exactly that case we install the locked tree with
# `npm install` and then check that the lockfile did not change, so real lockfile drift still fails.
set -euo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT

if npm ci --no-audit --no-fund 2>&1 | tee "$log"; then
  exit 0
fi
if grep -q 'package.json and package-lock.json or npm-shrinkwrap.json are in sync' "$log" &&
  ! grep 'Missing: ' "$log" | grep -vq '@ from lock file'; then
  echo "npm-ci.sh: npm ci refused the lockfile only for unresolvable optional packages of other platforms;" >&2
  echo "npm-ci.sh: installing the locked tree with npm install and checking the lockfile is unchanged" >&2
  before=$(sha256sum package-lock.json)
  rm -rf node_modules
  npm install --no-audit --no-fund
  if [ "$(sha256sum package-lock.json)" != "$before" ]; then
    echo "npm-ci.sh: npm install changed package-lock.json: the lockfile is out of date; run npm install and commit it" >&2
    exit 1
  fi
  exit 0
fi
exit 1
