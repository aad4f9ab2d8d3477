#!/usr/bin/env bash
# docs/validation.md is what tools/validation_table.sh writes from today's simulator: a change that
# moves a figure has to regenerate the page with it. $1: the repository, $2: the build directory.
set -euo pipefail
repo=$1
written=$(mktemp)
trap 'rm -f "$written"' EXIT
MPSIM_BUILD_DIR=$2 "$repo/tools/validation_table.sh" "$written"
if ! diff -u "$repo/docs/validation.md" "$written"; then
  echo "docs/validation.md is not today's: run tools/validation_table.sh" >&2
  exit 1
fi
