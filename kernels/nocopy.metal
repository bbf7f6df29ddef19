// Reads a buffer made with newBufferWithBytesNoCopy over an mmapped file
// (a known paravirtual-device fault returned stale data on macOS 14 guests).
#include <metal_stdlib>
using namespace metal;

kernel void vz_nocopy(device const uint *in [[buffer(0)]],
                      device uint *out [[buffer(1)]],
                      uint i [[thread_position_in_grid]])
{
    out[i] = in[i] * 3u + 1u;
}
