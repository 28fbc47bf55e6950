// CPU-only LibTorch: there is no device allocator to ask.
#include "sg2/train/device_memory.h"

namespace sg2::train {

double device_peak_memory_gib(const at::Device&) { return 0.0; }
void reset_device_peak_memory(const at::Device&) {}
double device_total_memory_gib(const at::Device&) { return 0.0; }
void release_cached_device_memory(const at::Device&) {}

}  // namespace sg2::train
