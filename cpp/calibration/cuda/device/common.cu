#include "common.cuh"

namespace rcal {

__global__ void fill_f32_kernel(float* out, std::size_t n, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        out[i] = value_f32(seed, i);
}

__global__ void fill_f64_kernel(double* out, std::size_t n, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        out[i] = value_f64(seed, i);
}

__global__ void fill_bits16_kernel(std::uint16_t* out, std::size_t n, std::uint64_t seed, bool bf16, bool is_signed) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        out[i] = bf16 ? value_bf16_bits(seed, i, is_signed) : value_fp16_bits(seed, i, is_signed);
}

__global__ void gather_f32_kernel(const float* src, const std::uint64_t* idx, float* out, std::size_t n) {
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = src[idx[i]];
}

namespace {
unsigned fill_grid(std::size_t n) {
    return static_cast<unsigned>(std::min<std::size_t>((n + kBlock - 1) / kBlock, 65536));
}
}  // namespace

void fill_f32(float* d, std::size_t n, std::uint64_t seed) {
    fill_f32_kernel<<<fill_grid(n), kBlock>>>(d, n, seed);
    RCAL_LAUNCHED();
}

void fill_f64(double* d, std::size_t n, std::uint64_t seed) {
    fill_f64_kernel<<<fill_grid(n), kBlock>>>(d, n, seed);
    RCAL_LAUNCHED();
}

void fill_bits16(std::uint16_t* d, std::size_t n, std::uint64_t seed, bool bf16, bool is_signed) {
    fill_bits16_kernel<<<fill_grid(n), kBlock>>>(d, n, seed, bf16, is_signed);
    RCAL_LAUNCHED();
}

std::vector<float> gather_f32(const float* d_src, const std::vector<std::uint64_t>& idx) {
    std::vector<float> out(idx.size());
    if (idx.empty()) return out;
    DeviceBuffer<std::uint64_t> d_idx(idx.size());
    DeviceBuffer<float> d_out(idx.size());
    RCAL_CUDA(cudaMemcpy(d_idx.ptr, idx.data(), d_idx.bytes(), cudaMemcpyHostToDevice));
    gather_f32_kernel<<<static_cast<unsigned>((idx.size() + kBlock - 1) / kBlock), kBlock>>>(d_src, d_idx.ptr, d_out.ptr,
                                                                                          idx.size());
    RCAL_LAUNCHED();
    RCAL_CUDA(cudaMemcpy(out.data(), d_out.ptr, d_out.bytes(), cudaMemcpyDeviceToHost));
    return out;
}

}  // namespace rcal
