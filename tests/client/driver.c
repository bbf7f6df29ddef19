/* The client's start-up, as llama.cpp's Metal backend does it: ggml's own device entry point
 * (ggml_metal_device_get, which ggml_backend_metal_reg calls per device) initializes the
 * device and logs what it found through ggml's log. Test rig only; never: decides or prints
 * a capability itself (every line a test reads is ggml's). */
#include "ggml-metal-device.h"

#include <stdio.h>

int main(void)
{
    ggml_metal_device_t dev = ggml_metal_device_get(0, 1);
    if (!dev || !ggml_metal_device_get_obj(dev)) {
        fprintf(stderr, "client: ggml found no Metal device\n");
        return 1;
    }
    return 0;
}
