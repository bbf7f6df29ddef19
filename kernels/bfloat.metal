// bfloat storage, conversion and arithmetic (llama.cpp's has_bfloat: Apple6 / Metal3).
// Needs Metal Shading Language 3.1 (macOS 14); the host compiles it with that version.
#include <metal_stdlib>
using namespace metal;

kernel void vz_bfloat(device const float *a [[buffer(0)]],
                      device const float *b [[buffer(1)]],
                      device const float *c [[buffer(2)]],
                      device bfloat *stored [[buffer(3)]],
                      device float *converted [[buffer(4)]],
                      device float *fma_out [[buffer(5)]],
                      uint i [[thread_position_in_grid]])
{
    bfloat ba = bfloat(a[i]);
    stored[i] = ba;                         // storage
    converted[i] = float(stored[i]);        // conversion back
    bfloat r = ba * bfloat(b[i]) + bfloat(c[i]);  // arithmetic in bfloat
    fma_out[i] = float(r);
}
