// A device: memory levels with bandwidth and capacity, compute peaks per number format and unit,
// interconnect, efficiency parameters, and the source of every number.
#pragma once

#include "roofline/format.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace roofline {

/// Memory levels, farthest first: DRAM/HBM/unified memory, L2 (or SLC / Infinity Cache), on-chip SRAM.
enum class Level : std::uint8_t { dram, l2, sram };
inline constexpr std::size_t kNumLevels = 3;
std::string_view level_name(Level l);
Level parse_level(std::string_view name);  ///< "dram" (also "hbm", "memory"), "l2" (also "slc"), "sram" (also "smem")

/// Vector units (CUDA cores, SIMD ALUs) or matrix units (tensor cores, matrix cores).
enum class Unit : std::uint8_t { vector, matrix };
std::string_view unit_name(Unit u);
Unit parse_unit(std::string_view name);

/// Where a record's numbers come from, and why they may be doubted.
struct Provenance {
    std::string source;
    std::string uncertain;  ///< empty when the numbers are firm
};

struct MemoryLevel {
    bool present = false;
    std::string type;            ///< "HBM3", "L2", "SLC", "shared memory per SM", ...
    double bandwidth_Bps = 0;    ///< aggregate bytes/s; 0 when no source gives it
    double capacity_bytes = 0;   ///< total over the device
    double per_unit_bytes = 0;   ///< SRAM: per SM / CU / core (what one thread block can use)
    /// L2: the largest working set a streaming kernel still reads at the level's bandwidth, measured (a cache
    /// benchmark's plateau: GA100's two partitions, for one, hold about 70 % of their 40 MB for it); 0: not measured
    double working_set_bytes = 0;
    std::vector<double> capacity_options_bytes;  ///< configurable memory (Apple, DGX Spark)
    int bus_width_bits = 0;
    bool measured = false;       ///< bandwidth measured on the device: already achievable, not derated again
    Provenance provenance;
};

struct ComputePeak {
    DType format = DType::fp32;
    Unit unit = Unit::vector;
    double flops_per_s = 0;  ///< dense FLOP/s (OP/s for integer formats)
    bool measured = false;  ///< measured on the device: already achievable, not derated again
    /// > 0: the fraction of this peak a GEMM microbenchmark of this format reached on the device (FP8 and FP4 GEMMs
    /// reach less of theirs than 16-bit ones); derated evaluation uses it instead of Efficiency::compute_fraction
    double achievable_fraction = 0;
    Provenance provenance;
};

struct Interconnect {
    std::string name;
    double bandwidth_Bps = 0;  ///< per direction, per device
    /// The most devices these links join (an HGX board's NVLink: 8, a GB200 NVL72 rack's: 72, a PCIe server: 8, a
    /// bridge: 2, a CPU link: 1); 0: any number (a network adapter).
    double domain_devices = 0;
    /// The kind of link, which sets a collective library's latency per step (NCCL's hwLatencies): "nvlink" (a GPU
    /// fabric: NVLink, NVSwitch, Infinity Fabric), "pcie" or "network" (a NIC between nodes). JSON "link"; when
    /// absent, read from the name: "PCIe…" is pcie, InfiniBand / Ethernet / RoCE / ConnectX / …GbE a network,
    /// anything else a GPU fabric.
    std::string link = "nvlink";
    /// Bus bandwidth an NCCL all-reduce reaches over these links at large messages (nccl-tests' busbw, per device
    /// and direction), measured; 0: not measured (the links' bandwidth is used). JSON "all_reduce_busbw_GBps" with
    /// its own "all_reduce_source".
    double all_reduce_busbw_Bps = 0;
    Provenance provenance, all_reduce_provenance;
};

/// Achievable fractions of the datasheet ceilings and the fixed cost per kernel launch.
struct Efficiency {
    double dram_bandwidth_fraction = 1.0;  ///< fraction of DRAM bandwidth a streaming kernel reaches
    /// The fraction was itself measured against the measured DRAM ceiling (a CPU profile's Eigen GEMV over its
    /// read bandwidth), so derated evaluation applies it to a measured DRAM level too; otherwise a measured level
    /// is taken as already achievable and not derated.
    bool dram_applies_to_measured = false;
    double compute_fraction = 1.0;         ///< fraction of the peak a large GEMM reaches
    double launch_overhead_s = 0;   ///< per kernel launch / dispatch
    Provenance provenance;
};

class Device {
public:
    std::string id, name, vendor, family, kind, architecture, notes;
    std::vector<std::string> aliases;
    int release_year = 0;
    int compute_units = 0;
    std::string compute_unit_name;
    /// Thread instructions one compute unit issues per clock (an NVIDIA SM: 4 warp schedulers x one 32-thread
    /// instruction each); 0 where the data does not say. The rate a kernel bound by its instruction issue runs at.
    double lanes_issued_per_clock = 0;
    Provenance compute_units_provenance;
    double boost_clock_hz = 0, base_clock_hz = 0;
    /// The clock the vector (CUDA-core) peaks are quoted at where the datasheet quotes its tensor peaks at a
    /// lower one (H100 SXM5: 1980 MHz beside 1830); 0: boost_clock_hz. The SMs issue at it.
    double vector_clock_hz = 0;
    Provenance clocks_provenance;
    std::array<MemoryLevel, kNumLevels> memory{};
    std::vector<ComputePeak> compute;
    std::vector<Interconnect> interconnect;
    double tdp_w = 0;
    Provenance power_provenance;
    Efficiency efficiency;
    std::string origin;  ///< the file it was loaded from, or "<string>"

    /// Dense peak FLOP/s for `format` on `unit`. Matrix falls back to vector units of the same format
    /// (devices without matrix units, e.g. Apple M1-M4 GPUs). Throws NotFound listing what the device has.
    double peak_flops(DType format, Unit unit = Unit::matrix) const;
    /// The peak record peak_flops uses, or nullptr.
    const ComputePeak* find_peak(DType format, Unit unit = Unit::matrix) const;
    /// Thread instructions issued per second by all compute units at the clock of the vector peaks
    /// (compute_units x lanes_issued_per_clock x vector_clock_hz, else the boost clock); 0 where the data lacks one.
    double issue_lanes_per_s() const {
        return compute_units * lanes_issued_per_clock * (vector_clock_hz > 0 ? vector_clock_hz : boost_clock_hz);
    }
    /// The peak an op in `format` actually runs at: the format's own peak (matrix falling back to vector), or,
    /// where the device has none, that of the wider format the same arithmetic runs in (bf16, fp16, tf32 -> fp32;
    /// int32 ALU work -> the fp32 lanes, an upper bound: no GPU has more int32 than fp32 lanes). fp8, fp4, int8 and
    /// int4 are not widened: NotFound, naming what the device has, when it has no units for them (fp8 on an A100 or
    /// an M1, int4 on an H100): the kernel that would run there is another engine's choice, not this op's.
    const ComputePeak& execution_peak(DType format, Unit unit = Unit::matrix) const;
    bool has_level(Level l) const { return memory[static_cast<std::size_t>(l)].present; }
    bool has_bandwidth(Level l) const;
    /// Bytes/s of a level. Throws NotFound when the device has no bandwidth for that level.
    double bandwidth(Level l = Level::dram) const;
    double capacity(Level l = Level::dram) const;
    /// The L2 a working set can count on: its measured working set (MemoryLevel::working_set_bytes), else its
    /// capacity; 0 where the device has no L2 in its data.
    double l2_working_set() const;
    /// The L2 the activations one kernel hands the next can stay in: its working set where the L2 has a bandwidth
    /// in the data (else they would cost nothing there), 0 otherwise.
    double l2_handoff_bytes() const { return has_bandwidth(Level::l2) ? l2_working_set() : 0.0; }
    const MemoryLevel& level(Level l) const { return memory[static_cast<std::size_t>(l)]; }
    /// On-chip SRAM one thread block can use (per SM / CU / core). Throws NotFound when unknown.
    double sram_per_unit_bytes() const;
    /// Peak FLOP/s over bandwidth: FLOP per byte at which `format` stops being bound by `level`.
    double ridge_point(DType format, Level l = Level::dram, Unit unit = Unit::matrix) const;
    /// Fastest interconnect per direction, 0 when none is listed.
    double interconnect_bandwidth() const;
    /// The fastest interconnect joining `devices` devices (its domain_devices 0 or at least that many); 0 when none.
    double interconnect_bandwidth(double devices) const;
    /// That interconnect itself; nullptr when none joins that many.
    const Interconnect* interconnect_for(double devices) const;

    /// The device as schema-conforming JSON text (round-trips through parse_device).
    std::string to_json(int indent = 2) const;
};

/// Parse and validate one device. `origin` names the input in error messages (a file path).
/// Errors name the origin, the field path and the bad value: InvalidArgument.
Device parse_device(std::string_view json_text, std::string_view origin = "<string>");
/// Read a file and parse_device it. FileError when it cannot be read.
Device load_device(const std::string& path);

/// A set of devices with case-insensitive lookup by id or alias.
class DeviceDB {
public:
    DeviceDB() = default;
    /// Load every *.json in `directory` except schema.json. Ids and aliases must be unique.
    static DeviceDB load_directory(const std::string& directory);
    /// data_path("hardware_db"): under $ROOFLINE_DATA_DIR when set (data.hpp).
    static std::string default_directory();

    void add(Device d);
    const Device& get(std::string_view id_or_alias) const;
    bool contains(std::string_view id_or_alias) const;
    std::vector<std::string> ids() const;  ///< sorted
    std::size_t size() const { return devices_.size(); }
    const std::vector<Device>& devices() const { return devices_; }

private:
    std::vector<Device> devices_;
    std::map<std::string, std::size_t> index_;  // lower-case id or alias -> position
};

}  // namespace roofline
