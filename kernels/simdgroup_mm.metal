// SIMD-group matrix multiply-accumulate with 8x8 tiles, float and half (llama.cpp's
// matrix-matrix kernels and flash attention). Matrices are zero-padded to multiples of 8 by
// the host; one SIMD-group computes one 8x8 tile of C = A * B.
#include <metal_stdlib>
using namespace metal;

kernel void vz_mm_f32(device const float *a [[buffer(0)]],
                      device const float *b [[buffer(1)]],
                      device float *c [[buffer(2)]],
                      constant uint3 &dims [[buffer(3)]],   // padded M, K, N
                      uint2 tile [[threadgroup_position_in_grid]])
{
    const uint K = dims.y, N = dims.z;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 ta, tb;
    for (uint k = 0; k < K; k += 8) {
        simdgroup_load(ta, a + tile.y * 8 * K + k, K);
        simdgroup_load(tb, b + k * N + tile.x * 8, N);
        simdgroup_multiply_accumulate(acc, ta, tb, acc);
    }
    simdgroup_store(acc, c + tile.y * 8 * N + tile.x * 8, N);
}

kernel void vz_mm_f16(device const half *a [[buffer(0)]],
                      device const half *b [[buffer(1)]],
                      device half *c [[buffer(2)]],
                      constant uint3 &dims [[buffer(3)]],
                      uint2 tile [[threadgroup_position_in_grid]])
{
    const uint K = dims.y, N = dims.z;
    simdgroup_half8x8 acc = make_filled_simdgroup_matrix<half, 8, 8>(0.0h);
    simdgroup_half8x8 ta, tb;
    for (uint k = 0; k < K; k += 8) {
        simdgroup_load(ta, a + tile.y * 8 * K + k, K);
        simdgroup_load(tb, b + k * N + tile.x * 8, N);
        simdgroup_multiply_accumulate(acc, ta, tb, acc);
    }
    simdgroup_store(acc, c + tile.y * 8 * N + tile.x * 8, N);
}
