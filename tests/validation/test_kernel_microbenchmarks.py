"""llama.cpp's GEMM kernels against kernel microbenchmarks of its MUL_MAT op: the ROCm build's MMQ on RDNA 3.5
(Strix Halo), the Vulkan build's cooperative-matrix shader on NVIDIA and Intel Xe2, the ROCm build's MMQ on CDNA3
through its MoE product MUL_MAT_ID, and the CUDA build's MMQ and MMVQ on i-quant weights (the last three at the end of
this file).

The rows (microbenchmarks/llamacpp_mul_mat_rdna35.csv, each with its source) time one weight matrix × n tokens
through the ROCm build's MMQ path. The model times the same GEMM as a one-layer model's linear op on the
'llama.cpp-rocm' engine and the ryzen-ai-max-395: the kernel's tiles, its occupancy on the family (engine_db
by_family: one block per output tile, no split-K, one tile per workgroup processor), its ALU work per weight format,
its launches. Nothing is fitted to these rows; they test the shape dependence the occupancy gives.
"""
from __future__ import annotations

import csv
import importlib.util
import math
from pathlib import Path

import pytest

import rooflinepy as rp

# the shared way to time one GEMM, and the Vulkan rows' calibration (the tests at the end of this file)
_spec = importlib.util.spec_from_file_location(
    "vulkan_mul_mat", Path(__file__).resolve().parents[2] / "calibration" / "vulkan_mul_mat.py")
vulkan_mul_mat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vulkan_mul_mat)

TABLE = Path(__file__).parent / "microbenchmarks" / "llamacpp_mul_mat_rdna35.csv"
QUANT = {"q4_0": "Q4_0", "q4_K": "Q4_K_S", "q6_K": "Q6_K"}  # a GGUF type whose every linear tensor has that type
# rows the model does not reach, with the reason and the measured / modelled range it currently gives
KNOWN_MISSES = {
    ("q6_K", 4096, 12288, 128): (
        "the AMD fork's baseline runs Q6_K through its own RDNA3.5 kernel and 64-row tiles "
        "(ggml_cuda_mmq_vec_dot_q6_K_q8_1_mma_rdna35, AMD-Ecosystem/llama.cpp#82); the model's Q6_K ALU work is "
        "counted in NVIDIA SASS (alu_ops_scale 1.306)", 0.40, 0.56),
}


def read_table(path: Path) -> list:
    """A microbenchmark table's rows (its '#' lines are the header with the sources)."""
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def rows():
    return read_table(TABLE)


def modelled_tflops(kind: str, m: int, k: int, n: int) -> float:
    """The model's rate for an m x k weight matrix times n tokens on the ROCm build and the Strix Halo (one op of a
    one-layer model, as calibration/vulkan_mul_mat.py times its rows)."""
    r = vulkan_mul_mat.gemm_op(rp, m, k, n, QUANT[kind], "ryzen-ai-max-395", "llama.cpp-rocm")
    assert r.compute == "int8 matrix", r.compute  # the MMQ path
    return float(2 * m * k * n / r.seconds / 1e12)


@pytest.mark.parametrize("row", rows(), ids=lambda r: f"{r['type']}-{r['m']}x{r['k']}-n{r['n']}")
def test_mmq_rate_on_rdna35(row):
    m, k, n = int(row["m"]), int(row["k"]), int(row["n"])
    ratio = float(row["tflops"]) / modelled_tflops(row["type"], m, k, n)
    key = (row["type"], m, k, n)
    if key in KNOWN_MISSES:
        reason, lo, hi = KNOWN_MISSES[key]
        assert lo <= ratio <= hi, f"known miss moved ({reason}): measured / modelled {ratio:.2f}"
        pytest.xfail(f"measured / modelled {ratio:.2f}: {reason}")
    assert 0.78 <= ratio <= 1.22, f"{row['type']} {m}x{k} n={n}: measured / modelled {ratio:.2f} ({row['source']})"


def test_the_occupancy_gives_the_shape_dependence():
    """Without the family's occupancy (tiles over 40 CUs, idle ones filled by split-K) the model's rate barely moves
    with the matrix's height, 8 tiles came out at 1.7x their measured rate and the seven legacy and K-quant rows at
    27 % MAPE; with it 11.9 % (geometric mean of measured / modelled 0.97). Since MMQ's token tile follows ggml's list
    (48 tokens in a 48-row tile, not a 64-row one a quarter empty) and its unpacking is spread over the tile's tokens
    (alu_weight_share), the 48-token row is modelled 19 % fast (it was 4 % slow, the padding standing in for the
    unpacking): 13.9 % (geometric mean 0.96)."""
    ratios = [float(r["tflops"]) / modelled_tflops(r["type"], int(r["m"]), int(r["k"]), int(r["n"]))
              for r in rows() if (r["type"], int(r["m"]), int(r["k"]), int(r["n"])) not in KNOWN_MISSES]
    mape = sum(abs(x - 1) for x in ratios) / len(ratios)
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    assert len(ratios) >= 7
    assert mape <= 0.14, mape
    assert abs(geo - 1) <= 0.05, geo


# llama.cpp's Vulkan cooperative-matrix GEMM (mul_mm.comp on KHR cooperative matrices, mul_mm_cm2.comp on NVIDIA's
# coopmat2) against its MUL_MAT microbenchmarks on NVIDIA and Intel Xe2 (microbenchmarks/llamacpp_mul_mat_vulkan.csv).
# calibration/vulkan_mul_mat.py derives the kernel's efficiency in engine_db from these rows (one per vendor), so the test holds the spread the
# model leaves across GPUs, generations and weight formats, and that the committed efficiencies are the script's.


@pytest.mark.parametrize("row", vulkan_mul_mat.rows(), ids=lambda r: f"{r['gpu']}-{r['type']}-{r['build']}")
def test_vulkan_coopmat_rate(row, tmp_path):
    ratio = float(row["tflops"]) / vulkan_mul_mat.modelled_tflops(rp, row, str(tmp_path))
    assert 0.78 <= ratio <= 1.22, f"{row['gpu']} {row['type']}: measured / modelled {ratio:.2f} ({row['source']})"


def test_vulkan_coopmat_efficiency_per_vendor(tmp_path):
    """Each vendor's rows centre on the model (geometric mean of measured / modelled within 3 %): the committed
    efficiencies are what calibration/vulkan_mul_mat.py derives (its --check runs in CI)."""
    by_vendor: dict = {}
    for r in vulkan_mul_mat.rows():
        ratio = float(r["tflops"]) / vulkan_mul_mat.modelled_tflops(rp, r, str(tmp_path))
        by_vendor.setdefault(r["vendor"], []).append(math.log(ratio))
    assert set(by_vendor) == {"nvidia", "intel"}
    for vendor, logs in by_vendor.items():
        assert abs(math.exp(sum(logs) / len(logs)) - 1) <= 0.03, vendor


# llama.cpp's MMQ on CDNA3 (MI300-class) against its MoE product's microbenchmarks (MUL_MAT_ID, the master column of
# ggml-org/llama.cpp#18896; microbenchmarks/llamacpp_mul_mat_id_cdna3.csv). engine_db's CDNA kernel times the
# unpacking as issue slots at 64 lane-instructions per CU and clock over 64-token tiles (mmq-config-cdna.cuh); before,
# at the MI300X's packed-FP32 vector peak over 128-token tiles, it ran these rows at 1.9x their measured rate.
CDNA3_TABLE = Path(__file__).parent / "microbenchmarks" / "llamacpp_mul_mat_id_cdna3.csv"
CDNA3_QUANT = {"q4_K": "Q4_K_S", "q8_0": "Q8_0", "iq2_xs": "IQ2_XS"}


def cdna3_rows():
    return read_table(CDNA3_TABLE)


def cdna3_ratio(row) -> float:
    """measured / modelled for one MUL_MAT_ID row: the routed product as a one-layer Mixtral-type model's ffn_up_exps
    on the MI300X ('llama.cpp-rocm')."""
    experts, used, m, k, n = (int(row[c]) for c in ("n_mats", "n_used", "m", "k", "n"))
    model = rp.Model.from_hf_config({
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": k, "intermediate_size": m,
        "num_hidden_layers": 1, "num_attention_heads": k // 128, "num_key_value_heads": k // 128, "vocab_size": 32000,
        "max_position_embeddings": 4096, "num_local_experts": experts, "num_experts_per_tok": used,
        "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16"})
    e = rp.estimate(model=model, quant=CDNA3_QUANT[row["type"]], device="mi300x", engine="llama.cpp-rocm",
                    prompt_tokens=n, gen_tokens=0, flash_attention=True)
    b = e.breakdown
    op = b[(b.phase == "prefill") & (b.op == "ffn_up_exps")].iloc[0]
    assert op.compute == "int8 matrix", op.compute  # MMQ: ggml_cuda_should_use_mmq takes every type on CDNA3
    return float(row["tflops"]) / (2 * m * k * n * used / op.seconds / 1e12)


def test_mmq_on_cdna3_centres_on_its_microbenchmarks():
    """The eleven rows centre on the model (geometric mean of measured / modelled 0.99, MAPE 32 %; nothing fitted)
    and none is off by more than 1.8x. What is left: IQ2_XS runs at 0.58-0.75 of the model from 128 tokens on (its
    unpacking counted in NVIDIA machine code, alu_ops_scale 1.414; its grid lookups cost more on gfx942), and the
    64-token rows run up to 1.7x faster than the model's one full 64-token tile per expert (mul_mat_q_switch_J at
    ggml-org/ggml@d99724f2 sizes J by the batch's tokens; the measured build, January 2026, does less work there)."""
    rows = cdna3_rows()
    ratios = [cdna3_ratio(r) for r in rows]
    assert len(ratios) >= 10
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    assert 0.9 <= geo <= 1.1, geo
    assert all(1 / 1.8 <= x <= 1.8 for x in ratios), ratios
    # the dense-tile rows of the legacy and K-quant types (512 tokens: 64 per expert, whole tiles) within 22 %
    dense = [x for r, x in zip(rows, ratios) if int(r["n"]) == 512 and r["type"] != "iq2_xs"]
    assert dense and all(0.78 <= x <= 1.22 for x in dense), dense


# llama.cpp's CUDA kernels on i-quant weights (microbenchmarks/llamacpp_mul_mat_cuda_iquants.csv: an RTX 3090's
# iq2_xxs and an RTX 5060 Ti's iq2_xs, a 4096 x 14336 matrix times 1-8 and 512 tokens). The corpus fits the CUDA
# engine to Q4_0 alone; these rows check its MMQ on other weight types (their unpacking counted from the kernel's
# machine code, engine_db alu_ops_scale) and on a Blackwell GeForce card. Nothing is fitted to them.
CUDA_IQ_TABLE = Path(__file__).parent / "microbenchmarks" / "llamacpp_mul_mat_cuda_iquants.csv"
CUDA_IQ_QUANT = {"iq2_xxs": "IQ2_XXS", "iq2_xs": "IQ2_XS"}


def cuda_iq_rows():
    return read_table(CUDA_IQ_TABLE)


def cuda_iq_ratio(row) -> float:
    """measured / modelled rate of one row: the product as a one-layer model's op on 'llama.cpp-cuda'."""
    m, k, n = int(row["m"]), int(row["k"]), int(row["n"])
    op = vulkan_mul_mat.gemm_op(rp, m, k, n, CUDA_IQ_QUANT[row["type"]], row["device"], "llama.cpp-cuda")
    assert op.compute == ("int8 matrix" if n > 8 else "fp32 vector"), op.compute  # MMQ above 8 tokens, MMVQ up to 8
    return float(op.seconds) / (float(row["us"]) * 1e-6)


def test_cuda_mmq_on_iquants_matches_its_microbenchmarks():
    """MMQ at 512 tokens: the RTX 3090's iq2_xxs and the RTX 5060 Ti's iq2_xs run at 1.08 and 1.09 of the model."""
    ratios = [cuda_iq_ratio(r) for r in cuda_iq_rows() if int(r["n"]) > 8]
    assert len(ratios) == 2
    assert all(0.85 <= x <= 1.2 for x in ratios), ratios


def test_cuda_mmvq_on_iquants_known_miss_past_two_tokens():
    """MMVQ at 1-8 tokens, a known miss the model does not yet express: mul_mat_vec_q calls vec_dot_q_cuda per weight
    block and token (mmvq.cu), and the measured time grows with the tokens from 3 on (RTX 3090 iq2_xxs 34 us at one
    token, 87 at eight; RTX 5060 Ti iq2_xs flat at 46-48 us for one and two, 137 at eight), while the model keeps the
    kernel on its weight stream (its products at the fp32 rate, the unpacking once per weight) and runs 8 tokens at
    2.3-2.5x their measured rate. The machine code (calibration/mmq_sass.py --mmvq 8: mul_mat_vec_q<IQ2_XXS, 8> for
    sm_86, nvcc 13.0, ggml-org/ggml@d99724f2) issues about the same instructions per weight at 8 tokens as Q4_0's
    does (1,256 and 1,200 warp instructions per 4,096 weights: the compiler shares the weights' unpacking between the
    tokens), which
    at the SM's issue rate is 0.37 of the RTX 3090's measured time: the kernel waits on its table lookups, and no
    microbenchmark of the legacy or K-quant types at 2-8 tokens was found to tell the two apart. The RTX 3090's one-
    and two-token rows take 10-14 us more than the model's weight stream and launches (0.62-0.69). The bounds hold
    the miss where it is, so that modelling it moves them."""
    rows = [r for r in cuda_iq_rows() if int(r["n"]) <= 8]
    ratios = {(r["gpu"], int(r["n"])): cuda_iq_ratio(r) for r in rows}
    assert len(ratios) == 12
    for (gpu, n), x in ratios.items():
        lo, hi = (0.85, 1.15) if n <= 2 and gpu == "RTX 5060 Ti" else (0.55, 0.8) if n <= 2 else (0.3, 0.8)
        assert lo <= x <= hi, (gpu, n, x)
