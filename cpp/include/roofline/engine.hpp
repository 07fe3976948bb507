// Inference engines as data (engine_db/): what an engine's kernels do on each backend — which kernel, unit and
// number format each linear layer runs on for its weight format and rows, whether dequantization hides under the
// loads, fusions, the fixed cost of its kernels, activation format, tensor-parallel split and all-reduce — each
// property with its source.
#pragma once

#include "roofline/device.hpp"
#include "roofline/format.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// How an engine sums the tensor-parallel partial outputs. ring: NCCL's ring, 2(N−1) steps each moving 1/N of the
/// message; one_shot: every rank reads its N−1 peers' partial sums directly over the links (peer-to-peer access),
/// one signal and one wait whatever N; two_shot: a reduce-scatter then an all-gather over peer-to-peer links, each
/// rank moving 2(N−1)/N of the message (as the ring) in two signal-and-wait rounds (the custom all-reduces of the
/// serving engines above a few hundred KB).
enum class AllReduce : std::uint8_t { ring, one_shot, two_shot };
std::string_view all_reduce_name(AllReduce a);  ///< "ring" | "one-shot" | "two-shot"

/// One protocol of the collective library (NCCL) as its tuner models a ring all-reduce over N ranks: latency
/// base + 2(N−1) × the per-step latency of the link kind, bus bandwidth the links' × bandwidth_share. The library
/// runs each message with the protocol its model gives the least time.
struct CollectiveProtocol {
    std::string name;                    ///< "LL", "LL128", "Simple"
    double base_latency_s = 0;
    std::array<double, 3> step_latency_s{};  ///< per ring step over nvlink, pcie, network links
    double bandwidth_share = 1;          ///< of the bus bandwidth (LL moves 4 data bytes in 8)
};

/// How a kernel occupies a device (LinearKernel's base values, or one device family's: LinearKernel::by_family).
struct KernelOccupancy {
    /// LinearKernel::efficiency: fraction of the device's achievable peak on the kernel's unit it reaches
    double efficiency = 1;
    /// Tiles resident on one compute unit at once (0.5: one per RDNA workgroup processor of two CUs): the wave width
    /// is compute_units × this
    double tiles_per_unit = 1;
    /// Fewer tiles than a wave holds: the K loop is split over the idle processors (true, vendor GEMMs) or only that
    /// many processors work (false: a kernel that launches one block per output tile, such as ggml's MMQ without
    /// stream-K)
    bool split_k = true;
    bool stream_k = false;  ///< LinearKernel::stream_k
    /// The kernel's ALU work (alu_ops_per_mac) on this family relative to the architecture it was counted on: the
    /// same source compiles to more or fewer instructions per multiply-add for another instruction set (ggml's MMQ
    /// converts its int32 sums with I2F on sm_80, with I2FP from sm_86)
    double alu_ops_scale = 1;
    bool operator==(const KernelOccupancy& o) const {
        return efficiency == o.efficiency && tiles_per_unit == o.tiles_per_unit && split_k == o.split_k &&
               stream_k == o.stream_k && alu_ops_scale == o.alu_ops_scale;
    }
};

/// Whether a kernel restricted to device `families` (empty: every family) and to MoE layers of at most `max_experts`
/// experts runs a layer of `experts` experts (0: dense) on a device of `family` (LinearKernel, LinearPath).
inline bool kernel_runs(const std::vector<std::string>& families, double max_experts, const std::string& family,
                        double experts) {
    return experts <= max_experts &&
           (families.empty() || std::find(families.begin(), families.end(), family) != families.end());
}

/// One kernel for linear layers (a weight matrix times activations).
struct LinearKernel {
    std::string name;
    std::vector<std::string> weights{"*"};  ///< format names (lower case), "float", "quantized" or "*"
    double max_rows = std::numeric_limits<double>::infinity();  ///< used up to this many rows
    Unit unit = Unit::matrix;
    /// "activation" (the engine's activation format), "weights" (the weight format's own: fp8 weights multiply in
    /// fp8, int8-wo and int4-g* in fp16 after dequantization) or a DType name
    std::string compute = "activation";
    /// Where the device has no matrix units for `compute` (FP4 or FP8 tensor cores), the format the kernel multiplies
    /// in instead ("activation": weights dequantized in registers, W4A16 / W8A16 as Marlin-style kernels run them);
    /// "" none: the combination is refused (the device's NotFound naming the format and the peaks it has).
    std::string fallback_compute;
    /// hardware_db families (lower case) the engine runs this kernel on; empty: every family. Elsewhere the kernels
    /// after it serve (ggml's native FP4 MMQ needs the block-scaled FP4 MMA of sm_120 / sm_121 and falls back to its
    /// int8 MMQ on every other GPU): it neither shadows nor ends the list (kernels_for).
    std::vector<std::string> families;
    /// The most experts of a mixture-of-experts layer it runs (ggml sends MoE layers of 64 experts or more to MMQ at
    /// any token count on RDNA3); infinite: any, and dense layers always. Like `families`, a limit here neither
    /// shadows nor ends the list.
    double max_experts = std::numeric_limits<double>::infinity();
    double tile_m = 64, tile_n = 64;        ///< output tile: rows × output features
    /// The kernel splits its tiles' K loop evenly over the processors (stream-K decomposition) when whole tiles
    /// would leave a wave partly idle: no wave quantization, only the row and column tiles' padding.
    bool stream_k = false;
    /// A mixture-of-experts call's row tile: false ("moe_row_tile": "expert") each expert's rows get the smallest
    /// tile that covers its share; true ("batch") the kernel picks one tile for the batch's token count, as for a
    /// dense GEMM of those rows, and every expert runs whole tiles of it however few rows it was routed (ggml's MMQ:
    /// mul_mat_q_switch_J picks J from ncols_max, the batch's tokens)
    bool moe_tile_from_batch = false;
    /// > 0: the row tiles it picks from are the multiples of this up to tile_m (ggml's MMQ: 8 on NVIDIA), the smallest
    /// that covers the rows in the fewest tiles; 0: powers of two from 16 (ops::gemm_utilization)
    double row_tile_step = 0;
    double dequant_every_rows = 0;          ///< > 0: weights dequantized again per block of this many rows
    bool dequant_overlapped = true;         ///< dequantization hides under the kernel's loads
    /// Fraction of the device's achievable peak on `unit` (Efficiency::compute_fraction, itself the fraction a
    /// vendor GEMM reaches) this kernel reaches at full occupancy: a kernel simpler than the vendor's GEMM reaches less.
    double efficiency = 1;
    double tiles_per_unit = 1;  ///< KernelOccupancy::tiles_per_unit
    bool split_k = true;        ///< KernelOccupancy::split_k
    /// The occupancy on devices of one hardware_db family where it differs from the values above (family -> the
    /// values that differ, each family with its source); unset ones are the kernel's, as fitted
    struct FamilyOccupancy {
        std::optional<double> efficiency, tiles_per_unit, alu_ops_scale;
        std::optional<bool> split_k, stream_k;
        Provenance provenance;
    };
    std::map<std::string, FamilyOccupancy> by_family;
    /// Vector lane operations per multiply-add the kernel issues besides its multiply-adds (loading and unpacking
    /// quantized tiles, scales, addresses), on `alu_format` lanes: a kernel whose inner loop is bound by them runs at
    /// the lanes' rate, not the matrix units'. With `alu_on_issue` ("alu_format": "issue") they are issue slots
    /// instead, one thread instruction each (a lane of a GPU warp instruction, one instruction of a CPU core), at the
    /// device's instruction issue rate
    /// (Device::issue_lanes_per_s), whatever unit executes them; a device that gives no issue rate runs them as
    /// alu_format (int32) operations.
    double alu_ops_per_mac = 0;
    DType alu_format = DType::int32;
    bool alu_on_issue = false;
    /// The share of alu_ops_per_mac (as counted in a tile of tile_m rows) a tile spends once per weight, unpacking its
    /// weight tile for all its rows: in a tile of r rows the work per multiply-add is alu_ops_per_mac × (share ×
    /// tile_m / r + 1 − share) (ggml's MMQ on sm_86: 0.226, a line through its loop's instructions at J = 16 to 128)
    double alu_weight_share = 0;
    /// alu_ops_per_mac of each weight format relative to the one it was measured or fitted on (format name in lower
    /// case -> factor; absent: 1): the unpacking of a K-quant block costs more instructions than a legacy block's.
    std::map<std::string, double> alu_ops_scale;
    double launches = 1;                    ///< kernels per call (2: activations quantized first, e.g. to q8_1)
    /// kernels per call of a mixture-of-experts layer (sorting the routed rows by expert first); 0: `launches`
    double moe_launches = 0;
    Provenance provenance;

    /// Whether it runs linear layers whose weights are in `weight`.
    bool handles(const Format& weight) const;
    /// Whether the engine runs it on a device of `family` (families empty, or naming it).
    bool runs_on(const std::string& family) const { return kernel_runs(families, max_experts, family, 0); }
    /// Whether it runs every layer it handles: every device family and any number of experts.
    bool unconditional() const { return families.empty() && !(max_experts < std::numeric_limits<double>::infinity()); }
    /// alu_ops_per_mac for weights in `weight`: × alu_ops_scale of its format.
    double alu_ops_for(const Format& weight) const;
    /// engine_db's name of what alu_ops_per_mac counts: "issue" (alu_on_issue) or alu_format's number format.
    std::string alu_format_name() const;
    /// engine_db's name of its MoE row tile: "batch" (moe_tile_from_batch) or "expert".
    std::string moe_row_tile_name() const { return moe_tile_from_batch ? "batch" : "expert"; }
    /// efficiency, tiles_per_unit, split_k, stream_k and alu_ops_scale on a device of `family` (by_family's where it
    /// names it).
    KernelOccupancy occupancy_on(const std::string& family) const;
};

/// Which K/V caches an engine's prompt flash attention converts to f16 before its kernel runs.
struct KvToF16 {
    /// KV cache format names (kv_format_names()); "*": every format but f16; empty: none.
    std::vector<std::string> formats;
    /// Queries per sequence in a micro-batch from which the converting kernel runs (fewer: a kernel that reads the
    /// cache as stored).
    double min_queries = 0;
    /// hardware_db families whose kernels read the cache as stored however many queries (another kernel path there)
    std::vector<std::string> except_families;
    /// Whether a prompt of `queries` tokens per sequence on a device of `family` converts a cache stored in `kv`.
    bool converts(const Format& kv, double queries, const std::string& family) const;
    bool operator==(const KvToF16& o) const {
        return formats == o.formats && min_queries == o.min_queries && except_families == o.except_families;
    }
};

/// How far measurements fall from an engine backend's estimates: the central `coverage` share of measured /
/// predicted ratios of its cross-validated corpus points (calibration/fit_defaults.py), per phase, with what the
/// corpus covered. Outside it (another device family, another weight format) the interval is widened `widen`-fold
/// in log space on each side (lo^widen, hi^widen) per thing not covered.
struct PredictionInterval {
    double coverage = 0.8;
    double decode_lo = 1, decode_hi = 1, prefill_lo = 1, prefill_hi = 1;  ///< ratios measured / predicted
    std::vector<std::string> device_families;  ///< hardware_db families the corpus measured ('*': any)
    std::vector<std::string> weight_formats;   ///< quantizations it measured ('*': any)
    double widen = 2;
    /// The most devices per copy of the model (tensor_parallel, either split) the corpus measured: an estimate on
    /// more is one thing more not covered (widened once more). 0: any number.
    double max_devices = 0;
};

/// How a serving engine schedules requests (continuous batching): its defaults, each with its source. Only engines
/// with `defined` can be served (serving.hpp); the others run one static batch (estimate()).
struct ServingPolicy {
    bool defined = false;
    double max_num_tokens = 8192;    ///< token budget of one iteration (decode tokens + prefill chunk)
    double max_batch = 256;          ///< most sequences running at once (vLLM max_num_seqs, TRT-LLM max_batch_size)
    double kv_memory_fraction = 0.9; ///< share of memory the KV cache may take (vLLM gpu_memory_utilization, ...)
    /// What kv_memory_fraction is a share of (engine_db 'kv_memory_of'): `total` the device's memory, weights,
    /// activations and reserves inside it (vLLM); `free` the memory left after them (TRT-LLM); `static` the device's
    /// memory holding weights and KV cache alone, activations and reserves in the rest (SGLang mem_fraction_static).
    enum class KvBudget : std::uint8_t { total, free, static_share };
    KvBudget kv_memory_of = KvBudget::total;
    double kv_block_tokens = 16;     ///< tokens per KV block (paged attention)
    bool kv_reserve_full = false;    ///< true: a request reserves blocks for prompt + every output token on admission
    bool chunked_prefill = true;     ///< prompts split across iterations within the token budget
    double cuda_graph_max_batch = 512;  ///< decode-only iterations up to this batch replay a CUDA graph
    double iteration_overhead_s = 0;    ///< host time per iteration (scheduling), overlapped with the GPU's
    double host_per_sequence_s = 0;     ///< host time per sequence of an iteration (sampling, request bookkeeping)
    double eager_launch_s = 0;          ///< per kernel outside CUDA graphs (host launch), added to the device's fixed cost
    double graph_reserve_bytes = 0;     ///< memory held by captured graphs and the runtime besides the KV cache
    /// The KV format the engine picks for a weight format when none is asked ("fp8" weights -> "fp8" KV);
    /// otherwise the activation format.
    std::map<std::string, std::string> kv_dtype_by_weights;
    /// max_batch and max_num_tokens chosen per workload from the KV capacity, as `trtllm-bench` does
    /// (tensorrt_llm/bench/tuning/heuristics.py), when the caller gives neither.
    bool bench_tuning = false;
    /// false: a prefill batch runs alone, the decodes waiting for it (SGLang's default); true: decodes and a
    /// prefill chunk share an iteration (vLLM, TensorRT-LLM in-flight batching)
    bool mixed_batches = true;
    /// (device memory GiB at least, max_num_tokens, max_batch): defaults that depend on the device's memory, the
    /// last row whose memory the device reaches applies (vLLM get_batch_defaults, SGLang's memory tiers)
    std::vector<std::array<double, 3>> limits_by_memory;
    std::string kv_dtype_for(const std::string& quant, const std::string& activation_format) const;
};

/// An engine on one backend, every property resolved: what the estimator reads.
struct EngineBackend {
    std::string backend = "any";             ///< "any", "cuda", "rocm", "metal", "vulkan", "cpu"
    double kernel_fixed_cost_scale = 1.0;    ///< × the device's fixed cost per kernel
    std::string activation_format = "fp16";  ///< activations between ops
    /// The formats the unfused attention's matrix products, Q·Kᵀ and P·V, run in on matrix units, when not the
    /// activations': "activation" (the activation format) or fp32 / tf32 / fp16 / bf16 / fp16_acc16 (fp16 with fp16
    /// sums: cuBLAS's CUBLAS_COMPUTE_16F); engine_db's attention_format names one for both or {qk, pv}. Softmax
    /// stays in the activation format.
    std::string attention_format = "activation", attention_pv_format = "activation";
    std::vector<LinearKernel> linear_kernels;
    bool fused_qkv = false;                  ///< Q, K and V projections as one GEMM when they share a format
    /// When a mat-vec multiplies one row (a single token in the whole batch), it applies the add that follows it
    /// (matvec_fused_bias: its bias, or the residual add where it has none), and the gate and up products it computes
    /// together apply their gated activation (matvec_fused_glu): those ops launch no kernel and move no bytes of
    /// their own.
    bool matvec_fused_bias = false, matvec_fused_glu = false;
    bool logits_last_token_only = true;      ///< prefill runs the output head for the last token only
    double runtime_overhead_bytes = 0;       ///< context, compute buffers, allocator slack
    AllReduce all_reduce = AllReduce::ring;
    double collective_step_latency_s = 0.5e-6;  ///< per synchronisation step of an all-reduce
    /// The collective library's protocols (NCCL's): with them a ring all-reduce is the library's, timed by
    /// collective_protocols' model; empty: 2(N−1) × collective_step_latency_s over the links' bandwidth.
    std::vector<CollectiveProtocol> collective_protocols;
    /// one-shot / two-shot kernels: the largest message (bytes per rank) they take, per tensor-parallel size
    /// ([up to N ranks, bytes], ascending N; the custom kernels' workspace); larger messages go to the collective
    /// library (collective_protocols). Empty: the custom kernel at any size.
    std::vector<std::array<double, 2>> custom_all_reduce_max_bytes;
    /// The custom kernels only for hidden sizes up to this (0: any): a wider model's all-reduces go to the library.
    double custom_all_reduce_max_hidden = 0;
    bool vocab_parallel = true;              ///< tensor parallel splits the embedding and output head by vocabulary
    /// × the device's achievable DRAM fraction (Efficiency::dram_bandwidth_fraction, a STREAM-like kernel's): what
    /// the engine's streaming kernels reach of it.
    double bandwidth_fraction = 1.0;
    /// Kernels an op of the forward pass launches, where the engine launches another number than the op's own count
    /// ("rope": 2 when Q and K are rotated apart; "decode_attention_flash": 2 with a split-KV reduction kernel).
    std::map<std::string, double> op_kernels;
    double prefill_ubatch_tokens = 0;        ///< a prompt runs in micro-batches of this many tokens (0: at once)
    /// How the engine spreads one copy of the model over several devices, the first its default: "layer" (whole
    /// layers per device, the devices one after another: llama.cpp's -sm layer) or "tensor" (every matrix split,
    /// partial sums all-reduced: tensor parallelism).
    std::vector<std::string> split_modes{"tensor"};
    /// Under a layer split: tokens per call of the engine's decode (llama.cpp's n_batch), whose micro-batches the
    /// devices overlap as a pipeline; 0: no overlap.
    double prefill_batch_tokens = 0;
    /// Under a layer split: the fixed time of handing a micro-batch's hidden state to the next device (the copy's
    /// latency and the wait on it), beside its bytes over the link.
    double layer_handoff_latency_s = 0;
    /// Under a layer split: added to kernel_fixed_cost_scale (what the engine's kernels cost more per launch there,
    /// e.g. CUDA graphs given up).
    double layer_split_kernel_fixed_cost_add = 0;
    int flash_attention_version = 2;         ///< 1: K/V blocks outermost (Q, O re-read per block); 2: Q blocks resident
    /// Whether the engine runs attention as flash attention when its user does not say (llama-bench's -fa auto,
    /// a serving engine's attention backend): what an estimate asks for unless it names flash_attention itself.
    bool flash_attention_default = false;
    /// The decode attention kernel runs one thread block per query head, each loading its KV head's cache by itself:
    /// a GQA group's other query heads read it again from L2 and dequantize it again (ops::decode_attention's
    /// per_query_head); false: the group shares the loads (or L2 serves them at no cost)
    bool decode_attention_per_query_head = false;
    /// Thread instructions the decode attention kernel issues on the CUDA cores (or SIMD lanes) per multiply-add of
    /// q·k and p·v, its loads, conversions, reductions and FMAs counted (from its machine code), timed on int32
    /// lanes, whose rate per SM and clock is the schedulers' issue rate; per query head. 0: not counted (the
    /// multiply-adds alone, on the activation format's units).
    double decode_attention_alu_ops_per_mac = 0;
    /// The number formats of flash attention's two products, Q·Kᵀ and P·V ("attention": attention_format's; an
    /// engine whose kernel sums P·V in fp16 names fp16_acc16 for it, which GeForce tensor cores run at twice the rate).
    std::string flash_qk_format = "attention", flash_pv_format = "attention";
    /// Thread instructions flash attention's forward kernel issues per score element besides its matrix products
    /// (the online softmax, conversions, shared-memory loads and addressing of its K/V loop, counted in its machine
    /// code), as [head_dim, instructions with one query head per block, instructions with a GQA group's heads in one
    /// block] rows in ascending head_dim, per device family ("default": the others); a device that also says how
    /// many instructions it issues per clock (Device::issue_lanes_per_s) runs the kernel no faster than that issue
    /// allows (ops::attention). Empty: not counted.
    std::map<std::string, std::vector<std::array<double, 3>>> flash_issue_per_score;
    /// The head sizes whose prompts run the fused flash-attention kernel when flash attention is on; a prompt of
    /// another head size runs the unfused path (scores through DRAM: mlx's sdpa falls back for 192 and 256).
    /// Decode is not affected. Empty: every head size.
    std::vector<double> flash_attention_head_dims;
    /// The K/V cache formats a prompt's flash attention first converts to an f16 copy (every cached position, per
    /// micro-batch and layer), which the kernel then reads (ggml-cuda's tile and mma kernels, ggml-metal's for
    /// legacy quants, ggml-vulkan's for q8_0); a cache of another format is read as stored.
    KvToF16 flash_attention_kv_to_f16;
    /// DRAM bytes per attention score element on the standard (non-flash) path: S and P written and read, through
    /// whatever format conversions the engine's kernels make (0: four passes in the activation format)
    double attention_score_bytes = 0;
    /// DRAM bytes the standard (non-flash) prompt path moves beyond its scores' passes and its one read of Q, K, V
    /// and write of the output: per cached K element (a conversion the K·Q product reads, e.g. ggml-cuda's f16 to
    /// f32 pass before its f32-precision cuBLAS GEMM) and per output element (the output's format conversion and
    /// the copy merging the heads). Both 0: none.
    struct UnfusedAttentionBytes {
        double per_cached_k = 0;
        double per_output = 0;
        bool operator==(const UnfusedAttentionBytes& o) const {
            return per_cached_k == o.per_cached_k && per_output == o.per_output;
        }
    };
    UnfusedAttentionBytes unfused_attention_bytes;
    PredictionInterval interval;  ///< prediction interval of its tokens/s
    ServingPolicy serving;        ///< continuous-batching defaults (serving engines only)
    /// The op names op_kernels may name.
    static const std::vector<std::string>& op_kernel_names();
    /// Each property's source, by its engine_db key ("activation_format", "linear_kernels[1]", ...).
    std::map<std::string, Provenance> sources;

    /// The kernels that run linear layers of weights in `weight`, in order of max_rows (the last has no limit and
    /// runs everywhere; a kernel of some families or expert counts only stays in the list before the ones that serve
    /// the rest).
    /// Throws InvalidArgument naming the engine and format when none handles it.
    std::vector<LinearKernel> kernels_for(const Format& weight, std::string_view engine_id) const;
};

/// EngineBackend::kernels_for over a kernel list, without copying the kernels: pointers into `kernels`. `backend`
/// and `engine_id` name the list in the error.
std::vector<const LinearKernel*> kernels_for(const std::vector<LinearKernel>& kernels, const Format& weight,
                                             std::string_view backend, std::string_view engine_id);

class Engine {
public:
    std::string id, name, summary, based_on, origin;
    std::vector<std::string> aliases;
    /// "any" first, then the backends that override it (resolved: each holds every property).
    std::vector<EngineBackend> backends;
    /// Device vendor -> the backend the engine runs on there; the key "cpu" names the backend for devices of kind
    /// "cpu" of every vendor (a CPU never runs its vendor's GPU backend); empty: "any" on every device.
    std::map<std::string, std::string> native_backend;
    Provenance native_backend_provenance;
    /// The weight formats the engine runs at all: names, "ggml" (every GGML tensor type: llama.cpp's GGUF files),
    /// "float", "quantized"; empty: any format its kernels take.
    std::vector<std::string> weight_formats;
    Provenance weight_formats_provenance;

    /// Whether the engine runs weights in `format` (its weight_formats).
    bool runs(const Format& weight) const;
    /// InvalidArgument naming the engine, the format and what it runs when it does not run `weight`.
    void check_runs(const Format& weight, std::string_view quant) const;
    /// The quantization `quant` names on this engine: on an engine that loads GGUF files ("ggml" in weight_formats)
    /// "mxfp4" is the MXFP4_MOE file type (the only way llama.cpp stores MXFP4), not the GPU checkpoint format of that
    /// name; every other name as it is.
    std::string quant_for(std::string_view quant) const;

    /// The backend the engine runs on for this device: a CPU's is the "cpu" entry of native_backend (a measured
    /// host's, else its "host" entry), any other device's its vendor's. Throws InvalidArgument naming the engine and
    /// the vendor (or "cpu") when the engine does not run there.
    const EngineBackend& on(const Device& device) const;
    /// A backend by name ("any", "cuda", ...); a backend the file does not describe is "any". NotFound for a name
    /// that is no backend.
    const EngineBackend& backend(std::string_view backend_name) const;
    /// The engine as engine_db JSON text (round-trips through parse_engine).
    std::string to_json(int indent = 2) const;
};

/// The backend names engine_db knows, in order: any, cuda, rocm, metal, vulkan, cpu.
const std::vector<std::string>& backend_names();

/// Parse and validate one engine file. `based_on` is looked up in `bases` (engines parsed before). Errors name the
/// origin, the field path and the bad value: InvalidArgument.
Engine parse_engine(std::string_view json_text, std::string_view origin = "<string>",
                    const std::vector<Engine>* bases = nullptr);

/// The engines of a folder, with case-insensitive lookup by id or alias.
class EngineDB {
public:
    EngineDB() = default;
    /// Every *.json in `directory` except schema.json; an engine's based_on must name another file of the folder.
    static EngineDB load_directory(const std::string& directory);
    /// data_path("engine_db") (data.hpp).
    static std::string default_directory();

    void add(Engine e);
    const Engine& get(std::string_view id_or_alias) const;
    bool contains(std::string_view id_or_alias) const;
    std::vector<std::string> ids() const;  ///< in the order the engines were added (llama.cpp first)
    const std::vector<Engine>& engines() const { return engines_; }

private:
    std::vector<Engine> engines_;
    std::map<std::string, std::size_t> index_;
};

/// The default engine database (EngineDB::default_directory()), loaded on first use and again after the data
/// directory changes. Shared, immutable; safe from any thread.
std::shared_ptr<const EngineDB> default_engines();
/// default_engines()->get(name), kept alive with the database.
std::shared_ptr<const Engine> engine(std::string_view name);
/// Ids of the default engines.
std::vector<std::string> engine_names();

}  // namespace roofline
