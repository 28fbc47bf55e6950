#pragma once
// Peak memory of the training device since the last reset (0 for the CPU, whose peak is the
// process RSS), implemented per LibTorch flavour: device_memory_cuda.cpp links only against a CUDA
// LibTorch.

#include <ATen/ATen.h>

namespace sg2::train {

double device_peak_memory_gib(const at::Device& device);
void reset_device_peak_memory(const at::Device& device);
// The device's whole memory (0 for the CPU).
double device_total_memory_gib(const at::Device& device);
// Hands the caching allocator's free blocks back to the device (after a probe that filled it).
void release_cached_device_memory(const at::Device& device);

}  // namespace sg2::train
