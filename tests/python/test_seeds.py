"""The seed articles' numbers, recomputed through the API."""
import pytest

import rooflinepy as rp


def test_a100_ridge_156_flop_per_byte_312_per_fp16_element():
    a100 = rp.device("a100-sxm-80gb")
    ridge = a100.ridge_point("fp16")
    assert ridge == pytest.approx(156, rel=0.02)  # 312 TFLOPS / 2.039 TB/s = 153; the seed rounds to 2.0 TB/s
    assert ridge * 2 == pytest.approx(312, rel=0.02)  # "each number must be used ~300 times"


def test_h100_ridge_295_and_generational_growth():
    a100, h100 = rp.device("a100-sxm-80gb"), rp.device("h100-sxm")
    assert h100.ridge_point("bf16") == pytest.approx(295, rel=0.005)
    assert h100.ridge_point("bf16") * 2 == pytest.approx(590, rel=0.005)
    assert h100.peak_flops("bf16") / a100.peak_flops("bf16") == pytest.approx(3.2, rel=0.01)
    assert h100.bandwidth() / a100.bandwidth() == pytest.approx(1.64, rel=0.01)


def test_gemm_4096_flops_elements_and_compute_bound():
    op = rp.ops.gemm(4096, 4096, 4096, dtype="fp16")
    assert op.flops == pytest.approx(1.374e11, rel=1e-3)
    elements = op.bytes / 2
    assert elements == pytest.approx(5.03e7, rel=1e-3)
    assert op.flops / elements == pytest.approx(2731, rel=1e-3)
    assert rp.device("a100").time(op, ideal=True).bound == "compute"


def test_elementwise_uses_about_a_300th_of_a100_compute():
    a100 = rp.device("a100")
    op = rp.ops.elementwise(2**28, flops_per_element=1, inputs=1, outputs=1, dtype="fp16")
    t = a100.time(op, ideal=True)
    assert t.bound == "memory:dram"
    # one FLOP per 2-byte element streamed at full bandwidth, against the fp16 tensor peak
    per_element_fraction = (a100.bandwidth() / 2) / a100.peak_flops("fp16")
    assert 1 / per_element_fraction == pytest.approx(300, rel=0.03)
    assert t.attainable_flops == pytest.approx(op.arithmetic_intensity * a100.bandwidth())


def test_attention_scores_33_5_mb_per_head_1_07_gb_per_layer():
    per_head = rp.ops.softmax(4096, 4096, "fp16").bytes_read()  # one score matrix read once
    assert per_head == pytest.approx(33.5e6, rel=2e-3)
    assert 32 * per_head == pytest.approx(1.07e9, rel=5e-3)


def test_flash_attention_io_against_standard():
    """The seed says standard attention's DRAM traffic grows with N², flash attention's does not.

    Precisely (FlashAttention, Theorem 2): standard moves Θ(N·d + N²) elements per head; flash never writes the
    N×N scores and probabilities, but re-reads Q and O once per block of K/V columns: Θ(N²·d²/M) for SRAM of M
    elements, quadratic too with a smaller factor when nothing catches the re-reads (the paper's model). On a
    GPU whose L2 holds one head's Q and O (an A100's 40 MB does up to N ≈ 80k at d = 128) the re-reads are L2
    hits and DRAM traffic is linear in N.
    """
    def op(n, kind, **kw):
        return rp.ops.attention(1, 32, n, head_dim=128, dtype="fp16", kind=kind, **kw)

    std = {n: op(n, "standard").bytes for n in (4096, 16384)}
    flash_l2 = {n: op(n, "flash", device="a100").bytes for n in (4096, 16384)}
    flash_paper = {n: op(n, "flash", sram_bytes=192 * 1024).bytes for n in (4096, 16384)}
    assert std[16384] / std[4096] == pytest.approx(16, rel=0.05)  # N²
    assert flash_l2[16384] / flash_l2[4096] == pytest.approx(4, rel=1e-9)  # N
    assert flash_paper[16384] / flash_paper[4096] == pytest.approx(16, rel=0.1)  # N²·d²/M
    for n in std:
        assert flash_l2[n] < flash_paper[n] < 0.55 * std[n]
    assert flash_l2[4096] == 32 * 4 * 4096 * 128 * 2  # read Q, K, V and write O once
