#!/usr/bin/env bash
# The mpsim executable ($1) links no CUDA, cuBLAS or NCCL library. A failing ldd, or one that lists
# no C library (so read nothing), fails the test rather than passing it.
set -euo pipefail
libraries=$(ldd "$1") || { echo "ldd $1 failed" >&2; exit 1; }
grep -q 'libc[.]so' <<<"$libraries" || { echo "ldd listed no C library for $1:" >&2; echo "$libraries" >&2; exit 1; }
if grep -E 'libcudart|libcublas|libnccl|libcuda[.]' <<<"$libraries"; then
  echo "$1 links the libraries above" >&2
  exit 1
fi
