#!/usr/bin/env bash
# Sets up whatever is missing, then runs rooflinepy's main job: tokens/s for a model × quant × device, and the
# A100 -> H100 ridge-point shift (printed, and drawn to ridge_shift.png when the plot module is present).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
OUT_DIR="$PWD"
cd /tmp
echo "== Qwen3-4B on an Apple M4 Pro (llama-bench style; the seed measured pp512 886.5/878.9/839.5, tg128 29.9/52.5/79.7)"
rooflinepy estimate -m qwen3-4b -q BF16,Q8_0,Q4_K_M -d m4-pro
echo
echo "== Llama-3.1-8B on an H100 SXM, bf16 and fp8, batch 1 and 64"
rooflinepy estimate -m llama-3.1-8b -q bf16,fp8 -d h100-sxm -b 1,64 -p 2048 -n 256 --engine cuda-graphs
echo
echo "== A100 -> H100: ridge points"
python3 - <<'PY'
import rooflinepy as rp
a, h = rp.device("a100-sxm-80gb"), rp.device("h100-sxm")
for d in (a, h):
    print(f"{d.name:24s} bf16 {d.peak_flops('bf16') / 1e12:7.1f} TFLOP/s  DRAM {d.bandwidth() / 1e12:5.2f} TB/s  "
          f"ridge {d.ridge_point('bf16'):6.1f} FLOP/B = {2 * d.ridge_point('bf16'):6.1f} FLOPs per bf16 element")
print(f"compute grew {h.peak_flops('bf16') / a.peak_flops('bf16'):.2f}x, bandwidth {h.bandwidth() / a.bandwidth():.2f}x")
PY
if rooflinepy plot --help >/dev/null 2>&1; then
  rooflinepy plot ridge-shift -o "$OUT_DIR/ridge_shift.png"
  echo "ridge shift drawn to $OUT_DIR/ridge_shift.png"
fi
