// Threadgroup memory used up to the effective limit: every thread fills its share of the
// whole threadgroup allocation, then reads another thread's share after a barrier.
#include <metal_stdlib>
using namespace metal;

kernel void vz_threadgroup(device uint *out [[buffer(0)]],
                           constant uint &words [[buffer(1)]],         // allocation / 4
                           threadgroup uint *shared [[threadgroup(0)]],
                           uint t [[thread_index_in_threadgroup]],
                           uint n [[threads_per_threadgroup]])
{
    for (uint w = t; w < words; w += n)
        shared[w] = w * 2654435761u + 12345u;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint acc = 0;
    for (uint w = (n - 1 - t); w < words; w += n)
        acc ^= shared[w] + w;
    out[t] = acc;
}
