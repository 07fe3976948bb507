// Decoder-only transformer architectures: from a HF config.json, a model_db entry or a GGUF header; their weight
// tensors (named as llama.cpp names them in GGUF); and the operator list of a phase — prefill of B×P tokens, or
// one decode step at context c.
#pragma once

#include "roofline/format.hpp"
#include "roofline/op.hpp"
#include "roofline/ops/attention.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

struct GgufFile;

enum class NormKind { rmsnorm, layernorm };
enum class MlpKind { gated, plain };  ///< gated: down(act(gate(x)) * up(x)); plain: down(act(up(x)))
enum class PositionKind { rope, learned };

struct Architecture {
    std::string id, name, model_type, source;
    std::string gguf_arch;  ///< llama.cpp's architecture name (llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, gpt2)
    int n_layer = 0, n_head = 0, n_kv_head = 0;
    double hidden = 0, head_dim = 0, ffn = 0, vocab = 0, max_context = 0;
    NormKind norm = NormKind::rmsnorm;
    MlpKind mlp = MlpKind::gated;
    PositionKind position = PositionKind::rope;
    std::string activation = "silu";
    bool tied_embeddings = false;
    bool qkv_bias = false;      ///< biases on the q, k, v projections (qwen2, gpt2)
    bool linear_bias = false;   ///< biases on every linear layer and layer norm (gpt2)
    bool qk_norm = false;       ///< per-head RMSNorm of q and k (qwen3, gemma3)
    bool post_norms = false;    ///< gemma2/3: norms after attention and after the MLP as well
    bool fused_qkv = false;     ///< one attn_qkv tensor (gpt2, phi3)
    bool fused_gate_up = false; ///< one ffn_up tensor holding gate and up (phi3)
    std::vector<double> window; ///< per layer: sliding-window size, 0 = full attention
    // Mixture of experts (n_expert == 0: dense).
    int n_expert = 0, n_expert_used = 0, n_shared_expert = 0;
    double expert_ffn = 0, shared_ffn = 0;
    std::vector<bool> moe_layer;  ///< per layer: MoE MLP (true) or dense MLP
    double parameters_reported = 0;  ///< from the catalogue's source, 0 when unknown

    double q_dim() const { return n_head * head_dim; }
    double kv_dim() const { return n_kv_head * head_dim; }
};

/// Every model_type from_hf_config understands.
std::vector<std::string> supported_model_types();

/// Tensor roles, after llama.cpp's GGUF names ("blk.N.<role>.weight").
struct WeightTensor {
    std::string name;            ///< GGUF name: "token_embd.weight", "blk.3.attn_v.weight", ...
    std::string role;            ///< "token_embd", "attn_v", "ffn_down_exps", "attn_norm", ...
    int layer = -1;              ///< -1 for tensors outside the blocks
    std::vector<double> shape;   ///< ne0 (row length = input features) first; experts along ne2
    double elements() const;
    bool is_matrix() const { return shape.size() >= 2 && shape[1] > 1; }
};

/// A weight tensor's storage format and bytes under a quantization.
struct TensorFormat {
    Format format;
    double bytes = 0;
    std::string type_name;  ///< "Q6_K", "bf16", "int4-g128", ...
};

class Model {
public:
    Architecture arch;
    std::vector<WeightTensor> tensors;
    std::vector<int> file_types;  ///< GGUF files: each tensor's ggml type; empty otherwise

    /// From HF config.json text (or the "config" of a model_db entry). Unknown model_type: InvalidArgument
    /// listing the supported ones; inconsistent sizes (heads not dividing, ...) name the field.
    static Model from_hf_config(std::string_view json_text, std::string_view origin = "<config>");
    /// From a model_db entry: {"id", "name", "source", "config": {...}, ...}.
    static Model from_catalog_entry(std::string_view json_text, std::string_view origin);
    /// From a GGUF header: the architecture from general.architecture and its keys, every tensor with its
    /// file type and exact bytes.
    static Model from_gguf(const GgufFile& file);

    /// Σ elements of every weight tensor (a tied output head is the embedding, counted once).
    double parameters() const;
    /// Formats and bytes of every tensor under `quant`: a llama.cpp mix (Q4_K_M, Q8_0, BF16, F16, ...), a GPU
    /// scheme (fp16, fp8, int8-wo, int4-g32/g64/g128, nvfp4, mxfp4: linear layers in that format, the rest in
    /// `activation`), or "gguf" (the file's own types, GGUF models only).
    std::vector<TensorFormat> tensor_formats(std::string_view quant, const Format& activation) const;
    /// Σ bytes of tensor_formats.
    double weight_bytes(std::string_view quant, const Format& activation) const;
};

/// Every quantization name tensor_formats accepts (llama.cpp mixes, then GPU schemes).
std::vector<std::string> quant_names();
/// True for names tensor_formats understands.
bool is_quant_name(std::string_view name);

/// One line of a phase's operator list: `count` identical ops.
struct PhaseOp {
    std::string name;   ///< "attn_q", "attention", "ffn_down", "rope", "output", "all_reduce", ...
    OpCost cost;        ///< one instance (empty for all_reduce)
    double count = 1;
    double collective_bytes = 0;  ///< all_reduce: bytes each rank contributes (timed on the interconnect)
};

struct PhaseOptions {
    Format activation;                         ///< activations between ops
    Format kv;                                 ///< KV cache
    ops::AttentionKind attention = ops::AttentionKind::standard;
    double sram_bytes = 0;                     ///< for flash attention
    double l2_bytes = 0;                       ///< for flash attention's re-reads
    bool logits_last_token_only = true;        ///< prefill computes the output head for the last token only
    double dequant_tile_rows = 0;              ///< > 0: quantized weights are dequantized once per this many rows of M
    bool dequant_overlapped = true;            ///< false: linear kernels do not hide dequantization under their loads
    bool fused_qkv = false;                    ///< attn_q, attn_k, attn_v of one format run as one "attn_qkv" GEMM
    bool vocab_parallel = true;                ///< tensor parallel splits the output head by vocabulary (else replicated)
    int tensor_parallel = 1;                   ///< weights and heads split over this many devices
    double gemv_max_rows = 8;                  ///< GEMMs with at most this many rows run as vector mat-vec kernels
    double gemm_tile_m = 64, gemm_tile_n = 64; ///< output tile of the matrix-unit GEMM kernel
    double compute_units = 1;                  ///< SMs / CUs / GPU cores the tiles are spread over
};

/// Operators of one forward pass over `batch` sequences of `tokens` new tokens each, after `past` tokens
/// already in the KV cache: prefill is (tokens = P, past = 0), a decode step at context c is (1, c - 1).
/// Identical ops of different layers are merged (count). Per-device ops under tensor parallelism.
/// (The slots of forward_slots, each instantiated by slot_cost at this point.)
std::vector<PhaseOp> forward_ops(const Model& model, const std::vector<TensorFormat>& formats, double batch,
                                 double tokens, double past, const PhaseOptions& options);

/// Whether tensor parallel keeps weight tensor `w` whole on every rank: norms, learned positions, the biases added
/// after a row-split projection (attn_output, ffn_down), and the embedding and output head unless
/// options.vocab_parallel. forward_slots splits every other tensor over the ranks.
bool replicated_under_tensor_parallel(const WeightTensor& w, const PhaseOptions& options);

/// How a slot's cost depends on the point (batch, tokens, past) of a forward pass.
enum class SlotKind : std::uint8_t {
    rows,        ///< a function of its rows alone: norms, pointwise maps, embedding lookup, KV append, router softmax
    linear,      ///< a projection through a weight tensor: mat-vec kernels up to gemv_max_rows rows, tiled GEMM above
    moe,         ///< a mixture-of-experts projection: routed rows and the expected number of active experts
    attention,   ///< attention over the KV cache: decode attention for one new token, tiled attention otherwise
    all_reduce,  ///< the tensor-parallel sum of partial outputs: rows × bytes_per_row over the interconnect
};

/// The builder a `rows` slot calls, with its rows × `scale` as the first argument.
enum class RowsBuilder : std::uint8_t { elementwise, rmsnorm, layernorm, embedding, softmax, kv_append };

/// One distinct operator of a forward pass, with the number of times a pass runs it (layers that have it). Its
/// shape is fixed by the model, formats and options; only the point (batch, tokens, past) is left to choose.
struct OpSlot {
    std::string name;          ///< as forward_ops names the op
    SlotKind kind = SlotKind::rows;
    double count = 0;          ///< instances per forward pass
    bool per_sequence = false; ///< rows are the batch, not batch × tokens (the output head of the last token)
    // rows: builder(rows × scale, a, b, c) in `format` (the table's format for an embedding)
    RowsBuilder builder = RowsBuilder::elementwise;
    double scale = 1, a = 0, b = 0, c = 0;
    Format format;             ///< weights (linear, moe, embedding); activations otherwise
    // linear, moe: k input features, n output features per rank; moe: experts and experts used per token
    double k = 0, n = 0, experts = 0, top_k = 0;
    // attention: heads and KV heads per rank, head_dim, sliding window (0: full attention)
    double heads = 0, kv_heads = 0, head_dim = 0, window = 0;
    double bytes_per_row = 0;  ///< all_reduce: bytes each rank contributes per row
};

/// The distinct operators of a forward pass in the order forward_ops lists them: O(tensors), built once per
/// (model, formats, options). Throws what forward_ops throws for the model and options (tensor_parallel must divide
/// the heads, one format per tensor).
std::vector<OpSlot> forward_slots(const Model& model, const std::vector<TensorFormat>& formats, const PhaseOptions& options);

/// Rows a slot processes at a point: batch × tokens, or the batch for per-sequence slots.
inline double slot_rows(const OpSlot& s, double batch, double tokens) { return s.per_sequence ? batch : batch * tokens; }

/// One instance of a slot at (batch, tokens, past): the operator builders' count (ops/*.hpp). all_reduce slots
/// return an empty cost (their bytes are rows × bytes_per_row, timed on the interconnect).
OpCost slot_cost(const OpSlot& slot, const PhaseOptions& options, double batch, double tokens, double past);

/// A linear slot's GEMM over `rows` rows on `unit` with utilization 1 and its weights dequantized once: what
/// slot_cost runs through mat-vec kernels (vector units, rows <= gemv_max_rows) or tiled kernels (matrix units).
OpCost linear_gemm(const OpSlot& slot, const PhaseOptions& options, double rows, Unit unit);
/// A linear slot's weights dequantized once more (vector FLOPs): what each further tile of rows costs a tiled
/// kernel that dequantizes per tile (PhaseOptions::dequant_tile_rows > 0).
OpCost linear_dequant_pass(const OpSlot& slot, const PhaseOptions& options);
/// How many times beyond the first a tiled kernel dequantizes a linear slot's weights at `rows` rows: quantized
/// weights are dequantized again for every tile of rows that reads them.
inline double linear_extra_dequant_passes(const OpSlot& slot, const PhaseOptions& options, double rows) {
    if (options.dequant_tile_rows > 0 && slot.format.dequant_flops_per_element > 0)
        return std::ceil(rows / options.dequant_tile_rows) - 1;
    return 0;
}
/// Fraction of the matrix units a tiled linear slot keeps busy at `rows` rows (ops::gemm_utilization).
double linear_utilization(const OpSlot& slot, const PhaseOptions& options, double rows);

/// KV-cache bytes of `batch` sequences of `context` tokens (sliding-window layers keep only their window).
double kv_cache_bytes(const Architecture& arch, double batch, double context, const Format& kv);

/// KV-cache bytes read by `gen` decode steps after a prompt of `prompt` tokens: the step at context c reads the
/// whole cache, kv_cache_bytes(c), for c = prompt + 1 ... prompt + gen, so the total grows as gen² (summed in closed
/// form per layer; a sliding-window layer reads at most its window).
double kv_cache_bytes_read(const Architecture& arch, double batch, double prompt, double gen, const Format& kv);

}  // namespace roofline
