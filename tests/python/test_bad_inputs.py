"""Every bad input gets one clear error: a catalogue of bad inputs across the Python API, the CLI and every file
loader (hardware_db device JSON, model_db entries and HF configs, calibration profiles, GGUF files).

Each case asserts the exception type (ValueError for a bad value, KeyError for an unknown name, FileNotFoundError for
a missing file) and that the message names the input and what is allowed. CLI cases assert a non-zero exit, the
message on stderr and no traceback. A batch that does not fit in memory is an answer, not an error (fits == False).
"""
from __future__ import annotations

import copy
import functools
import json
import math
import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Tuple, Type

import pytest

import rooflinepy as rp

DATA = rp.data_dir()
L4 = json.loads((DATA / "hardware_db" / "l4.json").read_text())
LLAMA_1B = json.loads((DATA / "model_db" / "llama-3.2-1b.json").read_text())
HF = LLAMA_1B["config"]

PROFILE = {
    "schema_version": 1, "kind": "rooflinepy-calibration-profile", "date": "2025-06-01T12:00:00Z",
    "tool": {"name": "pytest", "version": "1.0"},
    "device": {"name": "NVIDIA L4", "vendor": "nvidia", "kind": "gpu", "sm_count": 58, "clock_MHz": 2040,
               "memory_bytes": 24e9},
    "measurements": [
        {"ceiling": "bandwidth", "level": "dram", "kernel": "copy", "repetitions": 20, "si_unit": "B/s",
         "min": 2.4e11, "median": 2.5e11, "max": 2.6e11, "verified": True},
        {"ceiling": "gemm_flops", "dtype": "fp16", "unit": "matrix", "kernel": "gemm_fp16", "repetitions": 10,
         "si_unit": "FLOP/s", "min": 9e13, "median": 1e14, "max": 1.1e14, "verified": True},
    ],
}


@dataclass
class Case:
    id: str
    call: Callable[[Path], object]  # gets a fresh temporary folder
    exc: Type[BaseException]
    needles: Tuple[str, ...]  # substrings of the message: the input, the bad value, what is allowed


CASES = []


def case(id, exc, *needles):
    def register(fn):
        CASES.append(Case(id, fn, exc, needles))
        return fn
    return register


def message(e: BaseException) -> str:
    return e.args[0] if isinstance(e, KeyError) and e.args else str(e)


def with_changes(doc, changes):
    """A deep copy of `doc` with dotted paths set ('memory.dram.bandwidth_GBps': -1) or deleted (value DELETE)."""
    out = copy.deepcopy(doc)
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = out
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return out


DELETE = object()


# ---- API: operator sizes --------------------------------------------------------------------------------------
case("gemm negative", ValueError, "gemm m", "whole number >= 0", "-1")(lambda t: rp.ops.gemm(-1, 2, 2))
case("gemm NaN", ValueError, "gemm n", "whole number >= 0", "nan")(lambda t: rp.ops.gemm(2, math.nan, 2))
case("gemm inf", ValueError, "gemm k", "whole number >= 0", "inf")(lambda t: rp.ops.gemm(2, 2, math.inf))
case("gemm fractional", ValueError, "gemm m", "whole number", "1.5")(lambda t: rp.ops.gemm(1.5, 2, 2))
case("gemm product overflows 64 bits", ValueError, "gemm", "FLOPs exceed 1e+30", "too large")(
    lambda t: rp.ops.gemm(2**40, 2**40, 2**40))
case("gemm size above 2^53", ValueError, "gemm m", "at most 2^53", "1e+30")(lambda t: rp.ops.gemm(1e30, 1, 1))
case("gemm negative tile_bytes", ValueError, "gemm tile_bytes", ">= 0", "-1")(
    lambda t: rp.ops.gemm(8, 8, 8, tile_bytes=-1))
case("elementwise NaN FLOPs per element", ValueError, "elementwise flops_per_element", ">= 0", "nan")(
    lambda t: rp.ops.elementwise(10, math.nan))
case("softmax absurd rows", ValueError, "softmax rows", "at most 2^53")(lambda t: rp.ops.softmax(2.0**60, 8))
case("attention flash without SRAM", ValueError, "sram_bytes", "> 0", "0")(
    lambda t: rp.ops.attention(1, 8, 128, kind="flash", sram_bytes=0))
case("attention flash SRAM too small", ValueError, "sram_bytes", "4·head_dim")(
    lambda t: rp.ops.attention(1, 8, 128, kind="flash", sram_bytes=100))
case("attention causal with more queries than keys", ValueError, "seq_q <= seq_kv", "seq_q 8", "seq_kv 4")(
    lambda t: rp.ops.attention(1, 1, 8, 4, causal=True))
case("decode_attention KV heads not dividing heads", ValueError, "kv_heads", "divide heads", "heads 8")(
    lambda t: rp.ops.decode_attention(1, 8, 3, 128))
case("decode_attention per_query_head not a flag", TypeError, "decode_attention", "per_query_head", "True or False",
     "'yes'")(lambda t: rp.ops.decode_attention(1, 8, 2, 128, per_query_head="yes"))
case("attention backward a number", TypeError, "attention", "backward", "True or False", "2")(
    lambda t: rp.ops.attention(1, 8, 128, backward=2))
case("unknown number format", KeyError, "'fp17'", "did you mean 'fp16'?", "valid:")(
    lambda t: rp.ops.gemm(8, 8, 8, "fp17"))
case("unknown weight format", KeyError, "'q4_k_n'", "did you mean", "Q4_K")(
    lambda t: rp.ops.gemm(8, 8, 8, weight_dtype="q4_k_n"))
case("unknown compute unit", KeyError, "compute unit 'tensr'", "vector, matrix")(
    lambda t: rp.ops.gemm(8, 8, 8, unit="tensr"))
case("unknown attention kind", KeyError, "attention kind 'flsh'", "did you mean 'flash'?", "standard, flash")(
    lambda t: rp.ops.attention(1, 8, 128, kind="flsh"))

# ---- API: devices ---------------------------------------------------------------------------------------------
case("unknown device", KeyError, "device 'h10'", "did you mean 'h100-sxm'?", "rooflinepy devices")(
    lambda t: rp.device("h10"))
case("unknown memory level", KeyError, "memory level 'l3'", "did you mean 'l2'?", "dram, l2, sram")(
    lambda t: rp.device("a100").bandwidth("l3"))
case("format a device has no peak for", KeyError, "no matrix peak for 'fp64'", "it has:")(
    lambda t: rp.device("rtx-4090").peak_flops("fp64"))
case("ridge point of an unknown format", KeyError, "'bf17'", "did you mean 'bf16'?")(
    lambda t: rp.device("h100").ridge_point("bf17"))

# ---- API: models and estimates --------------------------------------------------------------------------------
case("unknown model", KeyError, "model 'llama-3-8'", "did you mean 'llama-3-8b'?", "valid:")(
    lambda t: rp.model("llama-3-8"))
case("unknown quantization", KeyError, "quantization 'Q4_K_N'", "did you mean", "Q4_K_M")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_N", "a100"))
case("unknown engine", KeyError, "engine 'llama-cpp'", "did you mean 'llama.cpp'?", "cuda-graphs, generic")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", engine="llama-cpp"))
case("unknown engine, asked by name", KeyError, "engine 'gptfast'", "did you mean 'gpt-fast'?", "generic, gpt-fast")(
    lambda t: rp.engine("gptfast"))
case("unknown KV cache format", KeyError, "KV cache format 'q8'", "did you mean 'q8_0'?", "f16, bf16")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", kv_dtype="q8"))
# ---- API: serving ------------------------------------------------------------------------------------------------
_S = dict(prompt_tokens=128, gen_tokens=128)
case("serve with a static-batch engine", ValueError, "engine 'llama.cpp'", "no continuous batching", "vllm")(
    lambda t: rp.serve("llama-3.1-8b", "Q4_K_M", "h100", engine="llama.cpp", **_S))
case("serve FP4 where the engine needs FP4 units", KeyError, "h100-sxm", "no matrix peak for 'fp4'", "it has:")(
    lambda t: rp.serve("llama-3.1-8b", "nvfp4", "h100", engine="trt-llm", **_S))
case("serve bad parallel notation", ValueError, "parallel", "'XP2'", "TPn, PPn, EPn or DEPn")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", parallel="XP2", **_S))
case("serve parallel and tensor_parallel both", ValueError, "parallel='TP2'", "not both")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", parallel="TP2", tensor_parallel=2, **_S))
case("serve expert parallel of a dense model", ValueError, "llama-3.1-8b", "has no experts", "MoE")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", parallel="TP2,EP2", **_S))
case("serve MTP on a model without an MTP module", ValueError, "llama-3.1-8b", "no multi-token-prediction module",
     "deepseek-r1")(lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", mtp_tokens=1, acceptance=0.8, **_S))
case("serve MTP without acceptance", ValueError, "serve", "mtp_tokens=1 needs acceptance", "0.85-0.90")(
    lambda t: rp.serve("deepseek-r1", "fp8", "h200", parallel="TP8", mtp_tokens=1, **_S))
case("serve MTP acceptance above 1", ValueError, "serve", "acceptance must be within [0, 1]", "1.5")(
    lambda t: rp.serve("deepseek-r1", "fp8", "h200", parallel="TP8", mtp_tokens=1, acceptance=1.5, **_S))
case("serve acceptance without MTP tokens", ValueError, "serve", "acceptance=0.8", "without mtp_tokens")(
    lambda t: rp.serve("deepseek-r1", "fp8", "h200", parallel="TP8", acceptance=0.8, **_S))
case("serve MTP tokens fractional", (TypeError, ValueError), "serve", "mtp_tokens", "1.5")(
    lambda t: rp.serve("deepseek-r1", "fp8", "h200", parallel="TP8", mtp_tokens=1.5, acceptance=0.8, **_S))
case("serve MTP tokens above 16", ValueError, "serve", "mtp_tokens", "17")(
    lambda t: rp.serve("deepseek-r1", "fp8", "h200", parallel="TP8", mtp_tokens=17, acceptance=0.8, **_S))
case("serve concurrency and rate", ValueError, "concurrency and request_rate", "exclusive")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", concurrency=4, request_rate=2.0, **_S))
case("serve zero prompt", ValueError, "prompt_tokens", "[1, 16777216]", "0")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", prompt_tokens=0, gen_tokens=8))
case("serve negative rate", ValueError, "request_rate", "(0, 1e9]", "-1")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", request_rate=-1.0, **_S))
case("serve memory fraction above 1", ValueError, "gpu_memory_fraction", "(0, 1]", "1.5")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", gpu_memory_fraction=1.5, **_S))
case("serve a model that does not fit", ValueError, "llama-3.1-405b", "does not fit", "more devices")(
    lambda t: rp.serve("llama-3.1-405b", "fp8", "h100", **_S))
case("serve past the context", ValueError, "prompt_tokens + gen_tokens", "context", "llama-3.1-8b")(
    lambda t: rp.serve("llama-3.1-8b", "fp8", "h100", prompt_tokens=130000, gen_tokens=2000))
case("all_reduce_time one device", ValueError, "devices", "[2, 1024]")(
    lambda t: rp.all_reduce_time("h100-sxm", 1e6, 1))
case("all_reduce_time negative bytes", ValueError, "message_bytes")(
    lambda t: rp.all_reduce_time("h100-sxm", -1.0, 8))
case("all_reduce_time engine not on the device", ValueError, "vllm", "apple")(
    lambda t: rp.all_reduce_time("m4-pro-20c", 1e6, 2))
case("all_reduce_time string bytes", TypeError, "message_bytes")(
    lambda t: rp.all_reduce_time("h100-sxm", "1e6", 8))
case("serve_sweep empty axis", ValueError, "concurrency", "empty list")(
    lambda t: rp.serve_sweep("llama-3.1-8b", "fp8", "h100", concurrency=[], **_S))
case("serve_sweep string axis", TypeError, "concurrency", "list of numbers", "'8'")(
    lambda t: rp.serve_sweep("llama-3.1-8b", "fp8", "h100", concurrency="8", **_S))
case("parse_parallel degree 0", ValueError, "'TP0'", "[1, 1024]")(
    lambda t: rp.parse_parallel("TP0"))
case("parse_parallel expert not dividing tensor", ValueError, "expert parallel 3", "divide tensor parallel 4")(
    lambda t: rp.parse_parallel("TP4,EP3"))
case("estimate batch 0", ValueError, "batch", ">= 1", "0")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", batch=0))
case("estimate negative batch", ValueError, "batch", "whole number >= 0", "-4")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", batch=-4))
case("estimate NaN batch", ValueError, "batch", "nan")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", batch=math.nan))
case("estimate infinite prompt", ValueError, "prompt_tokens", "inf")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", prompt_tokens=math.inf))
case("estimate absurd batch", ValueError, "batch", "1048576")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", batch=2**40))
case("estimate absurd context", ValueError, "prompt_tokens + gen_tokens", "2^30")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", prompt_tokens=2**45))
case("estimate nothing to do", ValueError, "prompt_tokens + gen_tokens", ">= 1")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "a100", prompt_tokens=0, gen_tokens=0))
case("estimate tensor_parallel 0", ValueError, "tensor_parallel", "[1, 1024]", "0")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "h100", tensor_parallel=0))
case("estimate tensor_parallel 2^64", ValueError, "tensor_parallel", "[1, 1024]")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "h100", tensor_parallel=2**64))
case("tensor_parallel not dividing the heads", ValueError, "tensor_parallel 3", "must divide the heads (32)")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "h100", tensor_parallel=3, split_mode="tensor"))
case("tensor_parallel without an interconnect", ValueError, "tensor_parallel 2", "interconnect", "m4-max-40c")(
    lambda t: rp.estimate("llama-3.2-1b", "Q4_K_M", "m4-max-40c", tensor_parallel=2))
case("speculative acceptance above 1", ValueError, "acceptance", "[0, 1]", "1.5")(
    lambda t: rp.estimate("llama-3.1-8b", "Q4_K_M", "a100", draft_model="llama-3.2-1b", draft_tokens=4,
                          acceptance=1.5))
case("speculative without draft tokens", ValueError, "draft_tokens", "[1, 1024]")(
    lambda t: rp.estimate("llama-3.1-8b", "Q4_K_M", "a100", draft_model="llama-3.2-1b", draft_tokens=0,
                          acceptance=0.7))
case("quant 'gguf' of a catalogue model", ValueError, "quant 'gguf'", "GGUF file")(
    lambda t: rp.estimate("llama-3.2-1b", "gguf", "a100"))
case("weight bytes of an unknown quantization", KeyError, "quantization 'q9'", "valid:")(
    lambda t: rp.model("llama-3.2-1b").weight_bytes("q9"))

# ---- API: calibration from measurements -----------------------------------------------------------------------
TG = {"model": "llama-3.2-1b", "quant": "Q4_K_M", "test": "tg128", "tokens_per_s": 150.0}
case("calibration without measurements", ValueError, "at least one measurement")(
    lambda t: rp.calibrate_from_measurements("a100", []))
case("measurement lacking fields", ValueError, "measurement 0 lacks", "quant, tokens_per_s", "test (ppN/tgN)")(
    lambda t: rp.calibrate_from_measurements("a100", [{"model": "llama-3.2-1b"}]))
case("measurement with zero tokens/s", ValueError, "measurement 0 tokens_per_s", "> 0", "0")(
    lambda t: rp.calibrate_from_measurements("a100", [dict(TG, tokens_per_s=0)]))
case("measurement with NaN tokens/s", ValueError, "measurement 0 tokens_per_s", "nan")(
    lambda t: rp.calibrate_from_measurements("a100", [dict(TG, tokens_per_s=math.nan)]))
case("measurement tokens/s not a number", ValueError, "measurement 1", "tokens_per_s", "'fast'", "a number")(
    lambda t: rp.calibrate_from_measurements("a100", [TG, dict(TG, tokens_per_s="fast")]))
case("measurement with a bad test name", ValueError, "test 'tg'", "ppN, tgN or ppN+tgM")(
    lambda t: rp.calibrate_from_measurements("a100", [dict(TG, test="tg")]))
case("measurement with batch 0", ValueError, "measurement 0 batch", ">= 1")(
    lambda t: rp.calibrate_from_measurements("a100", [dict(TG, batch=0)]))
case("measurement of an unknown model", KeyError, "model 'llama-9b'", "valid:")(
    lambda t: rp.calibrate_from_measurements("a100", [dict(TG, model="llama-9b")]))
case("roofline fit with too few points", ValueError, "at least 3 sweep points", "got 2")(
    lambda t: rp.calibration.fit_roofline([(1e9, 1e9, 1e-3), (2e9, 1e9, 2e-3)]))


# ---- HF config.json (Model.from_hf_config: a dict or a file) --------------------------------------------------
def hf(**changes):
    return lambda t: rp.Model.from_hf_config(with_changes(HF, changes))


case("heads not dividing hidden size", ValueError, "head_dim must be a whole number", "hidden_size 2048",
     "num_attention_heads 30")(hf(num_attention_heads=30, num_key_value_heads=6, head_dim=DELETE))
case("KV heads not dividing heads", ValueError, "num_key_value_heads (5) must divide num_attention_heads (32)")(
    hf(num_key_value_heads=5))
case("unknown model_type", ValueError, "model_type 'lama'", "did you mean 'llama'?", "supported: llama")(
    hf(model_type="lama"))
case("HF field of the wrong JSON type", ValueError, "<dict>", "'hidden_size'", "must be a number", '"2048"')(
    hf(hidden_size="2048"))
case("HF required field missing", ValueError, "<dict>", "'vocab_size'", "required")(hf(vocab_size=DELETE))
case("HF negative size", ValueError, "'intermediate_size'", "[0, 1e12]", "-1")(hf(intermediate_size=-1))
case("HF activation not a string", ValueError, "'hidden_act'", "must be a string", "3")(hf(hidden_act=3))
case("HF flag not a boolean", ValueError, "'tie_word_embeddings'", "true or false", '"yes"')(
    hf(tie_word_embeddings="yes"))
case("HF ten million layers", ValueError, "num_hidden_layers", "[1, 10000]", "10000000")(
    hf(num_hidden_layers=10**7))
case("HF absurd hidden size", ValueError, "hidden_size", "[1, 1048576]")(hf(hidden_size=2**30, head_dim=64))
case("HF absurd vocabulary", ValueError, "vocab_size", "[1, 16777216]")(hf(vocab_size=10**11))
case("HF fractional hidden size", ValueError, "hidden_size", "whole number within [1, 1048576]", "1.024")(
    hf(hidden_size=1.024, num_attention_heads=1, num_key_value_heads=1, head_dim=1))
case("HF fractional sliding window", ValueError, "sliding_window", "whole number", "4.5")(
    lambda t: rp.Model.from_hf_config(dict(with_changes(HF, {"model_type": "mistral"}), sliding_window=4.5)))
case("HF config that is not an object", ValueError, "must be a JSON object")(
    lambda t: rp._core.Model.from_hf_config("[1, 2]", "list.json"))


def hf_file(text: str):
    def call(t: Path):
        p = t / "config.json"
        p.write_text(text)
        return rp.Model.from_hf_config(p)
    return call


case("HF config file with invalid JSON", ValueError, "config.json", "not valid JSON")(hf_file('{"model_type": '))
case("HF config file missing", FileNotFoundError, "nope/config.json")(
    lambda t: rp.Model.from_hf_config(t / "nope" / "config.json"))


# ---- model_db entries (Model.from_catalog_entry, the loader of rp.model) ----------------------------------------
def entry(**changes):
    return lambda t: rp._core.Model.from_catalog_entry(json.dumps(with_changes(LLAMA_1B, changes)), "llama-3.2-1b.json")


case("model_db unknown field", ValueError, "llama-3.2-1b.json", "'paramters_reported'", "not a known field",
     "did you mean 'parameters_reported'?")(entry(paramters_reported={"value": 1, "source": "x"}))
case("model_db missing config", ValueError, "llama-3.2-1b.json", "'config'", "required")(entry(config=DELETE))
case("model_db config of the wrong type", ValueError, "llama-3.2-1b.json (config)", "must be a JSON object")(
    entry(config=[1, 2]))
case("model_db id of the wrong type", ValueError, "'id'", "must be a string", "7")(entry(id=7))
case("model_db negative reported parameters", ValueError, "'parameters_reported.value'", "(0,", "-5")(
    entry(parameters_reported={"value": -5, "source": "somewhere"}))


# ---- hardware_db device JSON (rp.load_device) -----------------------------------------------------------------
def device_file(changes=None, text=None, name="l4.json"):
    def call(t: Path):
        p = t / name
        p.write_text(text if text is not None else json.dumps(with_changes(L4, changes or {})))
        return rp.load_device(p)
    return call


case("device negative bandwidth", ValueError, "l4.json", "'memory.dram.bandwidth_GBps'", "[1e-09, 1e+06]", "-1")(
    device_file({"memory.dram.bandwidth_GBps": -1}))
case("device bandwidth in B/s instead of GB/s", ValueError, "'memory.dram.bandwidth_GBps'", "1e+06", "300000000000")(
    device_file({"memory.dram.bandwidth_GBps": 300e9}))
case("device vanishing peak", ValueError, "'compute[0].peak_TFLOPS'", "[1e-12, 1e+06]", "1e-300")(
    device_file({"compute.0.peak_TFLOPS": 1e-300}))
case("device efficiency above 1", ValueError, "'efficiency.compute_fraction'", "[0.001, 1]", "1.5")(
    device_file({"efficiency.compute_fraction": 1.5}))
case("device wrong JSON type", ValueError, "'memory.dram.capacity_GiB'", "must be a number", '"24"')(
    device_file({"memory.dram.capacity_GiB": "24"}))
case("device missing required field", ValueError, "l4.json", "'efficiency'", "required but missing")(
    device_file({"efficiency": DELETE}))
case("device unknown field", ValueError, "'memory.dram.bandwith_GBps'", "not a known field",
     "did you mean 'bandwidth_GBps'?")(device_file({"memory.dram.bandwith_GBps": 300}))
case("device unknown vendor", ValueError, "'vendor'", "one of nvidia, amd", "'nvidai'")(
    device_file({"vendor": "nvidai"}))
case("device unknown number format", ValueError, "'compute[1].format'", "fp16", "'fp17'")(
    device_file({"compute.1.format": "fp17"}))
case("device schema version", ValueError, "'schema_version'", "at most 1", "2")(device_file({"schema_version": 2}))
case("device id not matching the file name", ValueError, "'id'", "'l4'", "named 'l5.json'")(
    device_file(name="l5.json"))
case("device file with invalid JSON", ValueError, "l4.json", "not valid JSON")(device_file(text="{\"id\": "))
case("device file missing", FileNotFoundError, "missing.json", "no such file")(
    lambda t: rp.load_device(t / "missing.json"))
case("device path is a folder", FileNotFoundError, "is a directory")(lambda t: rp.load_device(t))


# ---- calibration profiles (rp.device_from_profile, Device.calibrated) -----------------------------------------
def profile(changes=None, apply_to=None, cpu=False):
    def call(t: Path):
        doc = with_changes(PROFILE, changes or {})
        p = t / "profile.json"
        p.write_text(json.dumps(doc))
        if apply_to:
            return rp.device(apply_to).calibrated(p)
        return rp.device_from_profile(p)
    return call


case("profile of another kind", ValueError, "profile.json", "'kind'", "'rooflinepy-calibration-profile'")(
    profile({"kind": "something-else"}))
case("profile date not ISO 8601", ValueError, "'date'", "ISO 8601 UTC", "'yesterday'")(profile({"date": "yesterday"}))
case("profile si_unit not matching the ceiling", ValueError, "'measurements[0].si_unit'", "'B/s'", "'FLOP/s'")(
    profile({"measurements.0.si_unit": "FLOP/s"}))
case("profile median outside [min, max]", ValueError, "'measurements[0].median'", "[min, max]")(
    profile({"measurements.0.median": 9e11}))
case("profile vanishing bandwidth", ValueError, "'measurements[0].min'", "at least 1 B/s", "1e-300")(
    profile({"measurements.0.min": 1e-300}))
case("profile unknown field", ValueError, "'measurements[1].kernal'", "not a known field", "did you mean 'kernel'?")(
    profile({"measurements.1.kernal": "x"}))
case("profile missing verified", ValueError, "'measurements[0].verified'", "required")(
    profile({"measurements.0.verified": DELETE}))
case("profile bandwidth without level", ValueError, "'measurements[0].level'", "dram, l2, sram")(
    profile({"measurements.0.level": DELETE}))
case("profile unknown dtype", ValueError, "'measurements[1].dtype'", "fp16", "'half-ish'")(
    profile({"measurements.1.dtype": "half-ish"}))
case("profile wrong JSON type", ValueError, "'measurements[0].repetitions'", "must be an integer", '"20"')(
    profile({"measurements.0.repetitions": "20"}))
case("profile lacking what a device needs", ValueError, "'device.clock_MHz'", "required to build a device")(
    profile({"device.clock_MHz": DELETE}))
case("CPU profile applied to a GPU", ValueError, "'device.kind'", "'cpu'", "l4")(
    profile({"device.kind": "cpu"}, apply_to="l4"))
case("profile file missing", FileNotFoundError, "nothing.json")(lambda t: rp.device_from_profile(t / "nothing.json"))


# ---- GGUF files (rp.Model.from_gguf), built byte by byte ------------------------------------------------------
def gstr(s) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


U32, F32, STRING, ARRAY, U64 = 4, 6, 8, 9, 10


def kv(key, vtype, value) -> bytes:
    out = gstr(key) + struct.pack("<I", vtype)
    if vtype == U32:
        return out + struct.pack("<I", value)
    if vtype == U64:
        return out + struct.pack("<Q", value)
    if vtype == F32:
        return out + struct.pack("<f", value)
    if vtype == STRING:
        return out + gstr(value)
    if vtype == ARRAY:  # of uint32
        return out + struct.pack("<IQ", U32, len(value)) + b"".join(struct.pack("<I", v) for v in value)
    raise ValueError(vtype)


LLAMA_KV = [("general.architecture", STRING, "llama"), ("llama.block_count", U32, 1),
            ("llama.embedding_length", U32, 64), ("llama.attention.head_count", U32, 2),
            ("llama.feed_forward_length", U32, 128)]
# name, shape (ne0 first), ggml type (0 = F32, 1 = F16)
LLAMA_TENSORS = [("token_embd.weight", [64, 10], 1), ("blk.0.attn_norm.weight", [64], 0),
                 ("blk.0.attn_q.weight", [64, 64], 1), ("blk.0.attn_k.weight", [64, 64], 1),
                 ("blk.0.attn_v.weight", [64, 64], 1), ("blk.0.attn_output.weight", [64, 64], 1),
                 ("blk.0.ffn_norm.weight", [64], 0), ("blk.0.ffn_gate.weight", [64, 128], 1),
                 ("blk.0.ffn_up.weight", [64, 128], 1), ("blk.0.ffn_down.weight", [128, 64], 1),
                 ("output_norm.weight", [64], 0)]


def gguf_bytes(kvs=LLAMA_KV, tensors=LLAMA_TENSORS, magic=b"GGUF", version=3, n_tensors=None, n_kv=None,
               offsets=None, raw_kv=b"", data=True) -> bytes:
    """A GGUF v2/v3 file: header, metadata, tensor infos, padding to 32, then zero-filled tensor data."""
    head = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                               len(kvs) + (1 if raw_kv else 0) if n_kv is None else n_kv)
    body = b"".join(kv(*x) for x in kvs) + raw_kv
    offset, infos = 0, b""
    for i, (name, shape, ggml_type) in enumerate(tensors):
        size = math.prod(shape) * (4 if ggml_type == 0 else 2)
        off = offsets[i] if offsets else offset
        infos += gstr(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
        infos += struct.pack("<IQ", ggml_type, off)
        offset += (size + 31) // 32 * 32
    out = head + body + infos
    out += b"\0" * ((32 - len(out) % 32) % 32)
    return out + (b"\0" * offset if data else b"")


def gguf_file(blob: bytes):
    def call(t: Path):
        p = t / "model.gguf"
        p.write_bytes(blob)
        return rp.Model.from_gguf(p)
    return call


def test_gguf_builder_makes_a_valid_file(tmp_path):
    m = gguf_file(gguf_bytes())(tmp_path)
    assert m.arch.n_layer == 1 and m.arch.hidden == 64 and m.parameters > 0
    e = rp.estimate(m, "gguf", "a100", prompt_tokens=16, gen_tokens=4)
    assert e.fits and e.decode_tokens_per_s > 0


VALID = gguf_bytes()
case("GGUF wrong magic", ValueError, "model.gguf", "not a GGUF file", "not 'GGUF'")(
    gguf_file(gguf_bytes(magic=b"GGML")))
case("GGUF version 1", ValueError, "model.gguf", "version 1 is not supported", "versions 2 and 3")(
    gguf_file(gguf_bytes(version=1)))
case("GGUF version 4", ValueError, "GGUF version 4", "versions 2 and 3")(gguf_file(gguf_bytes(version=4)))
case("GGUF big-endian", ValueError, "big-endian", "little-endian")(gguf_file(gguf_bytes(version=3 << 24)))
case("GGUF empty file", ValueError, "model.gguf", "truncated", "magic")(gguf_file(b""))
case("GGUF truncated in the metadata", ValueError, "model.gguf", "at byte 8", "bytes are left (truncated")(gguf_file(VALID[:100]))
case("GGUF truncated tensor data", ValueError, "runs past the end of the file", "truncated?")(
    gguf_file(VALID[:-64]))
case("GGUF oversized tensor count", ValueError, "tensor count 1099511627776", "limit", "max_tensors")(
    gguf_file(gguf_bytes(n_tensors=2**40)))
case("GGUF tensor count beyond the file", ValueError, "claims 100000 tensors", "bytes are left")(
    gguf_file(gguf_bytes(n_tensors=100000)))
case("GGUF oversized metadata count", ValueError, "metadata count 18446744073709551615", "max_kv")(
    gguf_file(gguf_bytes(n_kv=2**64 - 1)))
case("GGUF oversized string length", ValueError, "is 1152921504606846976 bytes long", "at most")(
    gguf_file(gguf_bytes(raw_kv=struct.pack("<Q", 2**60) + b"general.x")))
case("GGUF oversized array count", ValueError, "claims 4294967296 uint32 elements", "bytes are left")(
    gguf_file(gguf_bytes(raw_kv=gstr("general.arr") + struct.pack("<IIQ", ARRAY, U32, 2**32))))
case("GGUF misaligned tensor offset", ValueError, "data offset 4", "not a multiple of the alignment 32")(
    gguf_file(gguf_bytes(offsets=[0, 4] + [0] * 9)))
case("GGUF alignment not a power of two", ValueError, "general.alignment", "power of two")(
    gguf_file(gguf_bytes(kvs=LLAMA_KV + [("general.alignment", U32, 48)])))
case("GGUF unknown tensor type", ValueError, "unknown ggml type id 99", "known: F32, F16")(
    gguf_file(gguf_bytes(tensors=[("token_embd.weight", [64, 10], 99)])))
case("GGUF too many dimensions", ValueError, "has 5 dimensions", "at most 4")(
    gguf_file(gguf_bytes(tensors=[("token_embd.weight", [2, 2, 2, 2, 2], 0)])))
case("GGUF shape product overflows 64 bits", ValueError, "more than 2^63-1 elements")(
    gguf_file(gguf_bytes(tensors=[("token_embd.weight", [2**32, 2**32], 0)], data=False)))
case("GGUF missing architecture key", ValueError, "'llama.block_count'", "required")(
    gguf_file(gguf_bytes(kvs=[k for k in LLAMA_KV if k[0] != "llama.block_count"])))
case("GGUF unsupported architecture", ValueError, "general.architecture 'mamba'", "supported:", "llama")(
    gguf_file(gguf_bytes(kvs=[("general.architecture", STRING, "mamba")] + LLAMA_KV[1:])))
case("GGUF NaN layer count", ValueError, "'llama.block_count'", "float32 nan", "whole number within [0, 10000]")(
    gguf_file(gguf_bytes(kvs=[LLAMA_KV[0], ("llama.block_count", F32, math.nan)] + LLAMA_KV[2:])))
case("GGUF absurd layer count", ValueError, "llama.block_count", "[0, 10000]", "4000000000")(
    gguf_file(gguf_bytes(kvs=[LLAMA_KV[0], ("llama.block_count", U32, 4000000000)] + LLAMA_KV[2:])))
case("GGUF projection that is not a matrix", ValueError, "'blk.0.attn_q.weight'", "shape [64]", "must be a matrix")(
    gguf_file(gguf_bytes(tensors=[t if t[0] != "blk.0.attn_q.weight" else (t[0], [64], 1) for t in LLAMA_TENSORS])))
case("GGUF heads not dividing the width", ValueError, "head_dim must be a whole number", "hidden_size 64")(
    gguf_file(gguf_bytes(kvs=LLAMA_KV[:3] + [("llama.attention.head_count", U32, 3)] + LLAMA_KV[4:])))
# GGUF metadata against the tensors it describes (per-layer arrays as arrays, counts, shapes)
def _with_kv(key, vtype, value):
    return [k for k in LLAMA_KV if k[0] != key] + [(key, vtype, value)]


def _with_tensor(name, shape):
    return [t if t[0] != name else (name, shape, t[2]) for t in LLAMA_TENSORS]


TWO_LAYERS = [t for t in LLAMA_TENSORS] + [(n.replace("blk.0", "blk.1"), sh, ty) for n, sh, ty in LLAMA_TENSORS
                                           if n.startswith("blk.0")]
case("GGUF per-layer KV heads that differ", ValueError, "'llama.attention.head_count_kv' differs between layers",
     "layer 0: 2, layer 1: 1", "not supported")(
    gguf_file(gguf_bytes(kvs=_with_kv("llama.block_count", U32, 2) + [("llama.attention.head_count_kv", ARRAY, [2, 1])],
                         tensors=TWO_LAYERS)))
case("GGUF per-layer array of the wrong length", ValueError, "'llama.feed_forward_length' is an array of 3 values",
     "one per layer", "block_count 1")(gguf_file(gguf_bytes(kvs=_with_kv("llama.feed_forward_length", ARRAY, [128] * 3))))
case("GGUF block_count beyond its tensors", ValueError, "llama.block_count is 9999", "no tensor belongs to layer 1",
     "blk.1.*")(gguf_file(gguf_bytes(kvs=_with_kv("llama.block_count", U32, 9999))))
case("GGUF tensor beyond block_count", ValueError, "'blk.1.attn_q.weight' belongs to layer 1", "block_count is 1")(
    gguf_file(gguf_bytes(tensors=LLAMA_TENSORS + [("blk.1.attn_q.weight", [64, 64], 1)])))
case("GGUF tensor with a zero dimension", ValueError, "'blk.0.attn_q.weight' has shape [64, 0]",
     "every dimension must be at least 1")(gguf_file(gguf_bytes(tensors=_with_tensor("blk.0.attn_q.weight", [64, 0]))))
case("GGUF FFN wider than feed_forward_length", ValueError, "'blk.0.ffn_up.weight' has shape [64, 256]",
     "dimension 1 must be 128", "llama.feed_forward_length 128")(
    gguf_file(gguf_bytes(tensors=_with_tensor("blk.0.ffn_up.weight", [64, 256]))))
case("GGUF projection of the wrong width", ValueError, "'blk.0.attn_q.weight' has shape [32, 64]",
     "dimension 0 must be 64", "llama.embedding_length 64")(
    gguf_file(gguf_bytes(tensors=_with_tensor("blk.0.attn_q.weight", [32, 64]))))
case("GGUF zero heads named by its key", ValueError, "metadata key 'llama.attention.head_count' must be >= 1, got 0")(
    gguf_file(gguf_bytes(kvs=_with_kv("llama.attention.head_count", U32, 0))))
case("GGUF KV heads not dividing the heads", ValueError, "'llama.attention.head_count_kv' (3)", "divide")(
    gguf_file(gguf_bytes(kvs=LLAMA_KV + [("llama.attention.head_count_kv", U32, 3)])))
case("GGUF file missing", FileNotFoundError, "absent.gguf")(lambda t: rp.Model.from_gguf(t / "absent.gguf"))
case("GGUF path is a folder", FileNotFoundError, "is a directory")(lambda t: rp.Model.from_gguf(t))


# ---- the review's categories ("Robustness, second round"): each fixed at its root, several cases each -------------
NVIDIA_PROFILE = {"schema_version": 1, "kind": "rooflinepy-calibration-profile", "date": "2025-06-01T12:00:00Z",
                  "tool": {"name": "roofline-calibrate-cuda", "version": "0.1.0"},
                  "device": {"name": "NVIDIA H100 80GB HBM3", "vendor": "nvidia", "kind": "gpu"},
                  "measurements": [{"ceiling": "bandwidth", "level": "dram", "kernel": "copy_v4", "repetitions": 20,
                                    "si_unit": "B/s", "min": 2.9e12, "median": 3.0e12, "max": 3.05e12,
                                    "verified": True}]}
SMALL_CFG = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 2,
             "num_attention_heads": 8, "vocab_size": 1000}
SWEEP_BASE = dict(models=["qwen3-4b"], quants=["Q4_0"], devices=["rtx-4090"])


def tg(tokens_per_s):
    return [{"model": "llama-2-7b", "quant": "Q8_0", "test": "tg128", "tokens_per_s": tokens_per_s}]


# hangs and unbounded memory: every size bounded by a named limit, checked before the work or the allocation
case("calibration threads beyond the host", ValueError, "threads must be within [1,", "per CPU", "100000")(
    lambda t: rp.calibration.time_eigen("gemv", 1, 64, 64, threads=100000))
case("calibrate_cpu threads beyond the host", ValueError, "threads must be within", "100000")(
    lambda t: rp.calibration.calibrate_cpu(quick=True, threads=100000))
case("time_eigen operands beyond memory", ValueError, "run_gemm", "would take 1.2e+04 GB", "half this host's memory")(
    lambda t: rp.calibration.time_eigen("gemm", 10**6, 10**6, 10**6))
case("time_eigen repetitions without end", ValueError, "repetitions must be within [1, 100000]", "1000000000")(
    lambda t: rp.calibration.time_eigen("gemv", 1, 64, 64, repetitions=10**9))
case("sweep beyond memory", ValueError, "1,000,000,000 points", "MAX_POINTS_IN_MEMORY", "output=", "sweep_chunks")(
    lambda t: rp.sweep(**SWEEP_BASE, batch=list(range(1, 100001)), prompt_tokens=list(range(1, 10001))))
case("sweep chunk of no rows", ValueError, "chunk_rows must be a whole number within [1, 5,000,000]", "-1")(
    lambda t: list(rp.sweep_chunks(**SWEEP_BASE, chunk_rows=-1)))
case("sweep threads 2**40", ValueError, "threads must be within [1, 1024]", "1099511627776")(
    lambda t: rp.sweep(**SWEEP_BASE, threads=2**40))
# silent wrong answers: refused, each naming what was wrong
case("sweep flash_attention as a string", TypeError, "'flash_attention' values must be True, False or None (the engine's default)", "'false'")(
    lambda t: rp.sweep(**SWEEP_BASE, flash_attention="false"))
case("estimate flash_attention as a string", TypeError, "flash_attention must be True, False or None (the engine's default)", "'false'")(
    lambda t: rp.estimate("qwen3-4b", "Q4_0", "rtx-4090", flash_attention="false"))
case("measurement of 1e300 tok/s", ValueError, "tokens_per_s 1e+300", "pure roofline", "at most 1.5x")(
    lambda t: rp.calibrate_from_measurements("m1-max-32c", tg(1e300)))
case("measurement 20,000x the roofline", ValueError, "tokens_per_s 1e+06", "1.77e+04x the pure roofline")(
    lambda t: rp.calibrate_from_measurements("m1-max-32c", tg(1e6)))
case("HF head_dim as a string", ValueError, "field 'head_dim' must be a number", '"256"')(
    lambda t: rp.Model.from_hf_config({**SMALL_CFG, "head_dim": "256"}))
case("HF sliding_window as a string", ValueError, "field 'sliding_window' must be a number", '"4096"')(
    lambda t: rp.Model.from_hf_config({**SMALL_CFG, "model_type": "mistral", "sliding_window": "4096"}))
case("NUL in a GGUF path", ValueError, "from_gguf: path", "contains a NUL character")(
    lambda t: rp.Model.from_gguf(str(t / "m.gguf") + "\0junk"))
case("NUL in a config path", ValueError, "from_hf_config: config", "NUL character")(
    lambda t: rp.Model.from_hf_config(str(t / "c.json") + "\0junk"))
case("NUL in a device path", ValueError, "load_device: path", "NUL character")(
    lambda t: rp.load_device(str(t / "d.json") + "\0junk"))
case("NUL in a profile path", ValueError, "load_profile: profile", "NUL character")(
    lambda t: rp.calibration.load_profile(str(t / "p.json") + "\0junk"))
case("NUL in a path the core opens", ValueError, "contains a NUL character (at byte", "file name cannot hold one")(
    lambda t: rp._core.read_gguf(str(t / "m.gguf") + "\0junk"))
case("NVIDIA profile on an Apple device", ValueError, "field 'device.vendor' is 'nvidia'", "made by 'apple'")(
    lambda t: rp.device("m4-pro").calibrated(NVIDIA_PROFILE))
case("NVIDIA profile on an AMD device", ValueError, "'device.vendor' is 'nvidia'", "made by 'amd'")(
    lambda t: rp.calibration.calibrated("mi300x", NVIDIA_PROFILE))
# unclear errors: the parameter named, no signature dump
case("estimate batch None", TypeError, "estimate: batch must be a number, got None")(
    lambda t: rp.estimate("qwen3-4b", "Q4_0", "rtx-4090", batch=None))
case("estimate device 42", TypeError, "estimate: device must be a device id or a Device, got 42")(
    lambda t: rp.estimate("qwen3-4b", "Q4_0", 42))
case("estimate tensor_parallel as a string", TypeError, "tensor_parallel must be a number", "'2'")(
    lambda t: rp.estimate("qwen3-4b", "Q4_0", "rtx-4090", tensor_parallel="2"))
case("sweep devices [5]", TypeError, "'devices' values must be device ids or Devices, got 5")(
    lambda t: rp.sweep(**{**SWEEP_BASE, "devices": [5]}))
case("evaluate a string op", TypeError, "op must be an OpCost", "'gemm'")(lambda t: rp.evaluate("gemm", "a100"))
case("device 42", TypeError, "device must be a device id (str) or a Device, got 42")(lambda t: rp.device(42))
case("config nested too deeply", ValueError, "nested too deeply")(
    lambda t: rp.Model.from_hf_config({**SMALL_CFG, "x": functools.reduce(lambda a, _: [a], range(100000), [])}))
case("gemv of negative rows", ValueError, "gemv n must be a whole number >= 0", "-1")(lambda t: rp.ops.gemv(-1, 5))
case("explore batch 0", ValueError, "explore: batch must be an integer in [1, 65536]", "0")(
    lambda t: rp.explore(figure=False, batch=0))
# every other public function with a bad argument, so that each appears here at least once
case("format_info unknown", KeyError, "unknown storage format 'Q9_K'", "did you mean")(lambda t: rp.format_info("Q9_K"))
case("kv_cache_bytes negative batch", ValueError, "batch must be a whole number >= 0", "-1")(
    lambda t: rp.kv_cache_bytes("llama-3.1-8b", context=10, batch=-1))
case("kv_cache_bytes_read negative context", ValueError, "must be", "-5")(
    lambda t: rp.kv_cache_bytes_read("llama-3.1-8b", -5))
case("max_batch negative tpot", ValueError, "tpot_ms must be a number of milliseconds > 0", "-1")(
    lambda t: rp.max_batch(model="llama-3.1-8b", quant="Q4_0", device="h100-sxm", tpot_ms=-1))
case("cheapest negative target", ValueError, "target_tokens_per_s must be a number > 0", "-5")(
    lambda t: rp.cheapest(model="llama-3.1-8b", quant="Q4_0", target_tokens_per_s=-5, devices=["h100-sxm"],
                          price_per_hour={"h100-sxm": 2}))
case("pareto unknown column", KeyError, "pareto: no column 'nope'", "columns: a")(
    lambda t: rp.pareto(__import__("pandas").DataFrame({"a": [1]}), x="nope"))
case("parse_profile not JSON", ValueError, "x.json: not valid JSON")(lambda t: rp.calibration.parse_profile("{", "x.json"))
case("device_from_profile without schema", ValueError, "field 'schema_version' is required")(
    lambda t: rp.calibration.device_from_profile({"kind": "x"}))
case("report of a number", TypeError, "profile must be a path", "42")(lambda t: rp.calibration.report(42))
case("plot roofline without devices", ValueError, "roofline needs at least one device")(
    lambda t: rp.plot.roofline([], None))
case("plot ridge_shift unknown device", KeyError, "unknown device 'h999'")(lambda t: rp.plot.ridge_shift(["h999"]))
case("plot tokens_per_second unknown model", KeyError, "unknown model 'nope'")(
    lambda t: rp.plot.tokens_per_second(model="nope"))
case("plot attention_io negative length", ValueError, "seq_q must be a whole number >= 0", "-5")(
    lambda t: rp.plot.attention_io(seq_lens=[-5]))
case("plot kv_cache negative context", ValueError, "-1")(lambda t: rp.plot.kv_cache(model="llama-3.1-8b", context=[-1]))
case("plot batching unknown device", KeyError, "unknown device 'h999'")(
    lambda t: rp.plot.batching(model="llama-3.1-8b", device="h999"))
case("plot serving unknown axis", ValueError, "serving: x must be 'itl' or 'ttft'", "'tpot'")(
    lambda t: rp.plot.serving("llama-3.1-8b", "fp8", "h100-sxm", x="tpot"))
case("plot validation unknown fit", ValueError, "unknown fit 'cuda'", "the fits are: llama.cpp Metal")(
    lambda t: rp.plot.validation("cuda"))
case("plot attainable_flops negative intensity", ValueError, "intensity must be >= 0")(
    lambda t: rp.plot.attainable_flops("a100", -1.0))
case("kv_append negative batch", ValueError, "must be a whole number >= 0", "-1")(lambda t: rp.ops.kv_append(-1, 8, 8, 128))
case("layernorm negative rows", ValueError, "layernorm rows must be a whole number >= 0")(lambda t: rp.ops.layernorm(-1, 5))
case("rmsnorm negative cols", ValueError, "rmsnorm cols must be a whole number >= 0")(lambda t: rp.ops.rmsnorm(5, -1))
case("embedding_lookup negative tokens", ValueError, "embedding_lookup tokens must be a whole number >= 0")(
    lambda t: rp.ops.embedding_lookup(-1, 5))


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input_gets_one_clear_error(c: Case, tmp_path):
    with pytest.raises(c.exc) as info:
        c.call(tmp_path)
    msg = message(info.value)
    for needle in c.needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    assert "Traceback" not in msg and "json.exception" not in msg


def test_the_catalogue_is_large_enough():
    assert len(CASES) + len(CLI_CASES) >= 40


def _public_functions():
    """'rp.name(' of every public function that takes an argument: the package's, rp.calibration's, rp.plot's and
    rp.ops'."""
    import inspect

    import rooflinepy.calibration
    import rooflinepy.ops
    import rooflinepy.plot

    out = []
    for mod, prefix, names in ((rp, "rp.", rp.__all__), (rooflinepy.calibration, "rp.calibration.", dir(rooflinepy.calibration)),
                               (rooflinepy.plot, "rp.plot.", rooflinepy.plot.__all__),
                               (rooflinepy.ops, "rp.ops.", dir(rooflinepy.ops))):
        for name in names:
            f = getattr(mod, name)
            if name.startswith("_") or not inspect.isfunction(f):
                continue
            if mod is not rp and f.__module__ != mod.__name__:
                continue  # imported there, not defined
            if not inspect.signature(f).parameters:
                continue  # nothing to get wrong
            out.append(f"{prefix}{name}(")
    return out


def test_every_public_function_and_cli_subcommand_is_in_the_catalogue():
    source = Path(__file__).read_text()
    missing = [f for f in _public_functions() if f not in source]
    assert missing == [], f"add a bad-input case for: {missing}"
    from rooflinepy.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = set(sub.choices)
    covered = {c[1][0] for c in CLI_CASES}
    assert commands - covered == set(), f"add a CLI case for: {sorted(commands - covered)}"


# ---- answers, not errors --------------------------------------------------------------------------------------
def test_a_batch_that_does_not_fit_is_an_answer():
    e = rp.estimate("llama-3.1-70b", "BF16", "rtx-4090", batch=64, prompt_tokens=4096, gen_tokens=256)
    assert e.fits is False
    assert e.memory["total"] > e.memory["capacity"] > 0
    for k, v in e.to_dict().items():
        if isinstance(v, float):
            assert math.isfinite(v) and v >= 0, (k, v)
    assert e.max_batch < 64


def test_gguf_name_that_is_not_utf8_loads_with_replacement_characters(tmp_path):
    """Once UnicodeDecodeError from repr, id, estimate and sweep: undecodable bytes become U+FFFD at load."""
    m = gguf_file(gguf_bytes(kvs=LLAMA_KV + [("general.name", STRING, b"bad\xff\xfename")]))(tmp_path)
    assert m.id == "bad\ufffd\ufffdname" and "bad" in repr(m)
    e = rp.estimate(m, "gguf", "a100", prompt_tokens=16, gen_tokens=4)
    assert e.model == m.id and "bad" in repr(e)
    assert rp.sweep(models=[m], quants=["gguf"], devices=["a100"])["model"].tolist() == [m.id]


def test_zero_sized_ops_evaluate_cleanly():
    for op in (rp.ops.gemm(0, 0, 0), rp.ops.elementwise(0), rp.ops.softmax(0, 0)):
        t = rp.device("a100").time(op)
        assert t.seconds >= 0 and math.isfinite(t.seconds)


def test_clamped_sliding_window_settings_load():
    """Once a crash (a window layer index cast from 1e12): out-of-range layer settings mean 'no such layer'."""
    cfg = {"model_type": "qwen2", "hidden_size": 96, "num_hidden_layers": 2, "num_attention_heads": 3,
           "vocab_size": 10, "intermediate_size": 10, "sliding_window": 4, "use_sliding_window": True,
           "max_window_layers": 1e12}
    m = rp.Model.from_hf_config(cfg)
    assert list(m.arch.window) == [0, 0]


# ---- CLI: non-zero exit, the message on stderr, no traceback -------------------------------------------------
def cli(*args, env=None):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "rooflinepy", *args], capture_output=True, text=True, env=full_env,
                          cwd="/")


def data_dir_with(t: Path, folder: str, name: str, doc: dict) -> dict:
    """A copy of the installed data folders ($ROOFLINE_DATA_DIR) with one file of `folder` replaced by `doc`."""
    import shutil

    root = t / "data"
    shutil.copytree(rp.data_dir(), root)
    (root / folder / name).write_text(json.dumps(doc))
    return {"ROOFLINE_DATA_DIR": str(root)}


def bad_model_db(t: Path) -> dict:
    return data_dir_with(t, "model_db", "llama-3.2-1b.json", with_changes(LLAMA_1B, {"config.num_key_value_heads": 5}))


def bad_hardware_db(t: Path) -> dict:
    return data_dir_with(t, "hardware_db", "l4.json", with_changes(L4, {"efficiency.dram_bandwidth_fraction": 0}))


CLI_CASES = [
    ("unknown device", ["device", "h10"], None, ["unknown device 'h10'", "did you mean 'h100-sxm'?"]),
    ("unknown model", ["estimate", "-m", "llama-3-8", "-dev", "a100"], None, ["llama-3-8", "did you mean 'llama-3-8b'?"]),
    ("unknown quant", ["estimate", "-m", "llama-3.2-1b", "-q", "Q4_K_N", "-dev", "a100"], None,
     ["quantization 'Q4_K_N'", "did you mean"]),
    ("unknown engine", ["estimate", "-m", "llama-3.2-1b", "-dev", "a100", "--engine", "vllm-x"], None,
     ["unknown engine 'vllm-x'", "llama.cpp, cuda-graphs, generic"]),
    ("batch 0", ["estimate", "-m", "llama-3.2-1b", "-dev", "a100", "-b", "0"], None, ["batch", ">= 1"]),
    ("batch not a number", ["estimate", "-m", "llama-3.2-1b", "-dev", "a100", "-b", "eight"], None,
     ["-b/--batch", "whole numbers", "'eight'"]),
    ("tensor parallel not dividing heads", ["estimate", "-m", "llama-3.2-1b", "-dev", "h100", "-tp", "3", "-sm", "tensor"],
     None,
     ["tensor_parallel 3", "divide"]),
    ("negative gemm size", ["op", "gemm", "--m", "-1", "--n", "2", "--k", "2"], None, ["gemm m", "whole number >= 0"]),
    ("gemm product overflow", ["op", "gemm", "--m", str(2**40), "--n", str(2**40), "--k", str(2**40)], None,
     ["gemm", "exceed 1e+30"]),
    ("missing profile", ["calibrate", "report", "/nonexistent/profile.json"], None,
     ["/nonexistent/profile.json", "no such file"]),
    ("bad model_db entry", ["estimate", "-m", "llama-3.2-1b", "-dev", "a100"], bad_model_db,
     ["llama-3.2-1b.json", "num_key_value_heads (5) must divide num_attention_heads (32)"]),
    ("bad hardware_db file", ["device", "l4"], bad_hardware_db,
     ["l4.json", "'efficiency.dram_bandwidth_fraction'", "[0.001, 1]"]),
    # the review's CLI findings, and every other subcommand once
    ("unknown flag after a command", ["devices", "--bogus"], None, ["unrecognized arguments: --bogus"]),
    ("unknown flag before the command", ["--bogus"], None, ["unknown option '--bogus'", "the command comes first"]),
    ("unknown engine name", ["engines", "vlm"], None, ["unknown engine 'vlm'", "did you mean 'vllm'?"]),
    ("models with a flag it lacks", ["models", "--bogus"], None, ["unrecognized arguments: --bogus"]),
    ("quants of an unknown model", ["quants", "-m", "nope"], None, ["nope"]),
    ("validate an unknown fit", ["validate", "--fit", "nope"], None, ["nope"]),
    ("sweep range without end", ["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "-b", "1-infx2"], None,
     ["-b/--batch must be comma-separated numbers"]),
    ("sweep range too long", ["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "-b", "1-100000000x1.0000001"], None,
     ["expands to 184,206,817 values", "at most 1,000,000"]),
    ("sweep negative rows", ["sweep", "-m", "gpt2", "-q", "fp16", "-d", "l4", "--rows", "-5"], None,
     ["--rows must be >= 0, got -5"]),
    ("plot into a directory", ["plot", "ridge-shift", "-o", "/"], None, ["-o/--output", "is a directory"]),
    ("plot without a format", ["plot", "ridge-shift", "-o", "/tmp/figure"], None, ["must end in one of", ".png"]),
    ("calibrate cpu into a directory", ["calibrate", "cpu", "--quick", "-o", "/"], None, ["output '/' is a directory"]),
    ("calibrate cpu onto a full disk", ["calibrate", "cpu", "--quick", "-o", "/dev/full"], None,
     ["cannot write output '/dev/full'", "No space left"]),
    ("estimate past the model's context", ["estimate", "-m", "gpt2", "-dev", "l4", "-p", "2000"], None,
     ["exceed gpt2's context of 1024 tokens"]),
    ("serve with a static-batch engine", ["serve", "-m", "llama-3.1-8b", "-dev", "h100", "--engine", "gpt-fast"], None,
     ["engine 'gpt-fast'", "no continuous batching", "serving engines"]),
    ("serve bad parallel", ["serve", "-m", "llama-3.1-8b", "-dev", "h100", "--parallel", "TP2,XP2"], None,
     ["parallel: term 'XP2'", "TPn, PPn, EPn or DEPn"]),
    ("serve concurrency and rate", ["serve", "-m", "llama-3.1-8b", "-dev", "h100", "--concurrency", "8",
                                    "--request-rate", "2"], None, ["--concurrency and --request-rate are exclusive"]),
    ("serve bad concurrency", ["serve", "-m", "llama-3.1-8b", "-dev", "h100", "--concurrency", "0"], None,
     ["--concurrency must be comma-separated whole numbers >= 1"]),
    ("serve MTP without acceptance", ["serve", "-m", "deepseek-r1", "-dev", "h200", "--parallel", "TP8",
                                      "--mtp-tokens", "1"], None, ["mtp_tokens=1 needs acceptance"]),
]


@pytest.mark.parametrize("args, env, needles", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_bad_input_exits_nonzero_with_message_no_traceback(args, env, needles, tmp_path):
    proc = cli(*args, env=env(tmp_path) if env else None)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, f"{needle!r} not in {proc.stderr!r}"
