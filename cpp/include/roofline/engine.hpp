// Inference engines as data (engine_db/): what an engine's kernels do on each backend — which kernel, unit and
// number format each linear layer runs on for its weight format and rows, whether dequantization hides under the
// loads, fusions, the fixed cost of its kernels, activation format, tensor-parallel split and all-reduce — each
// property with its source.
#pragma once

#include "roofline/device.hpp"
#include "roofline/format.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// How an engine sums the tensor-parallel partial outputs. ring: NCCL's ring, 2(N−1) steps each moving 1/N of the
/// message; one_shot: every rank reads its N−1 peers' partial sums directly over the links (peer-to-peer access),
/// one signal and one wait whatever N.
enum class AllReduce : std::uint8_t { ring, one_shot };
std::string_view all_reduce_name(AllReduce a);  ///< "ring" | "one-shot"

/// One kernel for linear layers (a weight matrix times activations).
struct LinearKernel {
    std::string name;
    std::vector<std::string> weights{"*"};  ///< format names (lower case), "float", "quantized" or "*"
    double max_rows = std::numeric_limits<double>::infinity();  ///< used up to this many rows
    Unit unit = Unit::matrix;
    std::string compute = "activation";     ///< "activation" or a DType name
    double tile_m = 64, tile_n = 64;        ///< output tile: rows × output features
    double dequant_every_rows = 0;          ///< > 0: weights dequantized again per block of this many rows
    bool dequant_overlapped = true;         ///< dequantization hides under the kernel's loads
    Provenance provenance;

    /// Whether it runs linear layers whose weights are in `weight`.
    bool handles(const Format& weight) const;
};

/// An engine on one backend, every property resolved: what the estimator reads.
struct EngineBackend {
    std::string backend = "any";             ///< "any", "cuda", "rocm", "metal", "vulkan", "cpu"
    double kernel_fixed_cost_scale = 1.0;    ///< × the device's fixed cost per kernel
    std::string activation_format = "fp16";  ///< activations between ops
    std::vector<LinearKernel> linear_kernels;
    bool fused_qkv = false;                  ///< Q, K and V projections as one GEMM when they share a format
    bool logits_last_token_only = true;      ///< prefill runs the output head for the last token only
    double runtime_overhead_bytes = 0;       ///< context, compute buffers, allocator slack
    AllReduce all_reduce = AllReduce::ring;
    double collective_step_latency_s = 0.5e-6;  ///< per synchronisation step of an all-reduce
    bool vocab_parallel = true;              ///< tensor parallel splits the embedding and output head by vocabulary
    /// Each property's source, by its engine_db key ("activation_format", "linear_kernels[1]", ...).
    std::map<std::string, Provenance> sources;

    /// The kernels that run linear layers of weights in `weight`, in order of max_rows (the last has no limit).
    /// Throws InvalidArgument naming the engine and format when none handles it.
    std::vector<LinearKernel> kernels_for(const Format& weight, std::string_view engine_id) const;
};

class Engine {
public:
    std::string id, name, summary, based_on, origin;
    std::vector<std::string> aliases;
    /// "any" first, then the backends that override it (resolved: each holds every property).
    std::vector<EngineBackend> backends;
    /// Device vendor -> the backend the engine runs on there; empty: "any" on every vendor.
    std::map<std::string, std::string> native_backend;
    Provenance native_backend_provenance;

    /// The backend the engine runs on for this device. Throws InvalidArgument naming the engine and the vendor
    /// when the engine does not run on that vendor's devices.
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
