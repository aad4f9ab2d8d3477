#!/usr/bin/env bash
# configs/profiles/ is what tools/ship_profiles.sh fits from today's simulator and the published runs:
# a change that moves a fitted factor has to refit the shipped profiles with it. $1: the repository,
# $2: the build directory.
set -euo pipefail
repo=$1
written=$(mktemp -d)
trap 'rm -rf "$written"' EXIT
MPSIM_BUILD_DIR=$2 "$repo/tools/ship_profiles.sh" "$written"
if ! diff -ru "$repo/configs/profiles" "$written"; then
  echo "configs/profiles is not today's: run tools/ship_profiles.sh" >&2
  exit 1
fi
