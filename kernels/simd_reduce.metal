// SIMD-group reductions and shuffles (the paths llama.cpp gates on Apple7 / Metal3).
// One thread per element; threadgroups are a multiple of the SIMD width, so SIMD-group g
// covers elements [32g, 32g+32) of the dispatch (the host checks threadExecutionWidth == 32).
#include <metal_stdlib>
using namespace metal;

kernel void vz_simd_reduce(device const float *x [[buffer(0)]],
                           device float *sum [[buffer(1)]],
                           device float *mx [[buffer(2)]],
                           device float *down [[buffer(3)]],
                           device float *prefix [[buffer(4)]],
                           uint i [[thread_position_in_grid]])
{
    float v = x[i];
    sum[i] = simd_sum(v);
    mx[i] = simd_max(v);
    down[i] = simd_shuffle_down(v, 1);
    prefix[i] = simd_prefix_inclusive_sum(v);
}
