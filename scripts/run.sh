#!/usr/bin/env bash
# Sets up whatever is missing, then runs rooflinepy's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
cd /tmp
echo "== A100 -> H100: ceilings and ridge points"
rooflinepy device a100
echo
rooflinepy device h100-sxm
echo
echo "== A 4096^3 fp16 GEMM and a decode-sized GEMV on both"
rooflinepy op gemm --m 4096 --n 4096 --k 4096 --dtype fp16 --device a100
rooflinepy op gemm --m 4096 --n 4096 --k 4096 --dtype fp16 --device h100-sxm
rooflinepy op gemv --n 4096 --k 4096 --dtype fp16 --device h100-sxm
