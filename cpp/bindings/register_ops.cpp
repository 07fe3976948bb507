#include "bindings.hpp"

#include <optional>

using namespace roofline;

namespace {
Format fmt_or(const std::optional<std::string>& name, const Format& fallback) {
    return name ? parse_format(*name) : fallback;
}
}  // namespace

void register_ops(py::module_& m) {
    using opt_str = std::optional<std::string>;
    m.def(
        "gemm",
        [](double M, double N, double K, const std::string& dtype, const opt_str& a_dtype, const opt_str& weight_dtype,
           const opt_str& out_dtype, const std::string& unit, double tile_bytes, double batch) {
            const Format base = parse_format(dtype);
            return ops::gemm(M, N, K, fmt_or(a_dtype, base), fmt_or(weight_dtype, base), fmt_or(out_dtype, base),
                             ops::GemmOptions{parse_unit(unit), tile_bytes, batch});
        },
        py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype") = "fp16", py::kw_only(), py::arg("a_dtype") = py::none(),
        py::arg("weight_dtype") = py::none(), py::arg("out_dtype") = py::none(), py::arg("unit") = "matrix",
        py::arg("tile_bytes") = 0.0, py::arg("batch") = 1.0,
        "C[m×n] = A[m×k]·B[k×n]: 2mnk FLOPs; compulsory DRAM traffic, or the tiled model with tile_bytes of on-chip memory");
    m.def(
        "gemv",
        [](double N, double K, const std::string& dtype, const opt_str& weight_dtype, const opt_str& out_dtype) {
            const Format base = parse_format(dtype);
            return ops::gemv(N, K, base, fmt_or(weight_dtype, base), fmt_or(out_dtype, base));
        },
        py::arg("n"), py::arg("k"), py::arg("dtype") = "fp16", py::kw_only(), py::arg("weight_dtype") = py::none(),
        py::arg("out_dtype") = py::none(), "y[n] = W[n×k]·x[k] on vector units");
    m.def(
        "elementwise",
        [](double n, double flops_per_element, double inputs, double outputs, const std::string& dtype) {
            return ops::elementwise(n, flops_per_element, inputs, outputs, parse_format(dtype));
        },
        py::arg("n"), py::arg("flops_per_element") = 1.0, py::arg("inputs") = 1.0, py::arg("outputs") = 1.0,
        py::arg("dtype") = "fp16");
    m.def(
        "softmax", [](double rows, double cols, const std::string& dtype) { return ops::softmax(rows, cols, parse_format(dtype)); },
        py::arg("rows"), py::arg("cols"), py::arg("dtype") = "fp16");
    m.def(
        "layernorm",
        [](double rows, double cols, const std::string& dtype, bool affine) {
            return ops::layernorm(rows, cols, parse_format(dtype), affine);
        },
        py::arg("rows"), py::arg("cols"), py::arg("dtype") = "fp16", py::arg("affine") = true);
    m.def(
        "rmsnorm",
        [](double rows, double cols, const std::string& dtype, bool affine) {
            return ops::rmsnorm(rows, cols, parse_format(dtype), affine);
        },
        py::arg("rows"), py::arg("cols"), py::arg("dtype") = "fp16", py::arg("affine") = true);
    m.def(
        "attention",
        [](double batch, double heads, double seq_q, std::optional<double> seq_kv_opt, double head_dim, const std::string& dtype,
           const std::string& kind, bool backward, bool causal, std::optional<double> sram_bytes,
           std::optional<double> l2_bytes, const Device* device, double kv_heads, const opt_str& kv_dtype, int flash_version) {
            const auto k = ops::parse_attention_kind(kind);
            if (flash_version < 1 || flash_version > 3)
                throw InvalidArgument("attention flash_version must be 1, 2 or 3, got " + std::to_string(flash_version));
            ops::FlashTiles tiles;  // the device's (ops::flash_tiles), unless given
            tiles.version = flash_version == 1 ? 1 : 2;
            if (k == ops::AttentionKind::flash) {
                if (device && !sram_bytes) tiles = ops::flash_tiles(*device, flash_version);
                else if (device) {  // the SRAM given, the rest the device's
                    tiles.l2_bytes = device->l2_working_set();
                    tiles.units = std::max(1.0, static_cast<double>(device->compute_units));
                }
                if (sram_bytes) tiles.sram_bytes = *sram_bytes;
                if (l2_bytes) tiles.l2_bytes = *l2_bytes;
            } else {  // the scores pass through the device's L2 where they fit and it has a bandwidth, or l2_bytes=
                if (device) tiles.l2_bytes = device->l2_handoff_bytes();
                if (l2_bytes) tiles.l2_bytes = *l2_bytes;
            }
            const Format act = parse_format(dtype);
            const Format kv = fmt_or(kv_dtype, act);
            return ops::attention(ops::AttentionShape{batch, heads, seq_q, seq_kv_opt.value_or(seq_q), head_dim, causal, kv_heads},
                                  act, k, backward, tiles, &kv);
        },
        py::arg("batch"), py::arg("heads"), py::arg("seq_q"), py::arg("seq_kv") = py::none(), py::arg("head_dim") = 128.0,
        py::arg("dtype") = "fp16", py::kw_only(), py::arg("kind") = "standard", py::arg("backward") = false,
        py::arg("causal") = false, py::arg("sram_bytes") = py::none(), py::arg("l2_bytes") = py::none(),
        py::arg("device") = py::none(), py::arg("kv_heads") = 0.0, py::arg("kv_dtype") = py::none(),
        py::arg("flash_version") = 2,
        "Attention over seq_q queries and seq_kv keys: kind='standard' materialises scores in DRAM (in L2 where S and P "
        "fit in device='s L2 with a bandwidth, or in l2_bytes=), kind='flash' tiles them in SRAM (device=: its SRAM per "
        "compute unit and L2, or sram_bytes= / l2_bytes=); kv_heads (0: heads) "
        "and kv_dtype count K and V once per KV head in their format; backward=True adds the backward pass");
    m.def(
        "decode_attention",
        [](double batch, double heads, std::optional<double> kv_heads, double context, double head_dim,
           const std::string& dtype, const opt_str& kv_dtype, const std::string& kind, bool per_query_head,
           double alu_ops_per_mac) {
            const Format act = parse_format(dtype);
            return ops::decode_attention(batch, heads, kv_heads.value_or(heads), context, head_dim, act,
                                         fmt_or(kv_dtype, act), ops::parse_attention_kind(kind), 0, per_query_head,
                                         alu_ops_per_mac);
        },
        py::arg("batch"), py::arg("heads"), py::arg("kv_heads") = py::none(), py::arg("context") = 1.0,
        py::arg("head_dim") = 128.0, py::arg("dtype") = "fp16", py::kw_only(), py::arg("kv_dtype") = py::none(),
        py::arg("kind") = "flash", py::arg("per_query_head") = false, py::arg("alu_ops_per_mac") = 0.0,
        "One new token per sequence attending a KV cache of `context` tokens; per_query_head=True: one thread block "
        "per query head, the group's re-reads of the cache served by L2 (and dequantized again); alu_ops_per_mac: "
        "the kernel's thread instructions per multiply-add, as int32 vector work");
    m.def(
        "kv_append",
        [](double batch, double tokens, double kv_heads, double head_dim, const std::string& dtype, const opt_str& kv_dtype) {
            const Format act = parse_format(dtype);
            return ops::kv_append(batch, tokens, kv_heads, head_dim, act, fmt_or(kv_dtype, act));
        },
        py::arg("batch"), py::arg("tokens"), py::arg("kv_heads"), py::arg("head_dim"), py::arg("dtype") = "fp16",
        py::kw_only(), py::arg("kv_dtype") = py::none());
    m.def(
        "embedding_lookup",
        [](double tokens, double hidden, const std::string& dtype, const opt_str& out_dtype) {
            const Format table = parse_format(dtype);
            return ops::embedding_lookup(tokens, hidden, table, fmt_or(out_dtype, table));
        },
        py::arg("tokens"), py::arg("hidden"), py::arg("dtype") = "fp16", py::kw_only(), py::arg("out_dtype") = py::none());
}
