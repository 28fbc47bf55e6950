#pragma once
// CRC-32C (Castagnoli), as TFRecord files checksum their lengths and payloads. Uses the SSE4.2
// crc32 instruction when the CPU has it and a portable slicing-by-8 table otherwise; both give the
// same value (a unit test compares them on random buffers of every alignment).

#include <cstddef>
#include <cstdint>

namespace sg2::data {

uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);           // fastest available
uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc = 0);  // table, any CPU
bool crc32c_hardware_available();

// TFRecord's masking: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t masked_crc32c(const void* data, size_t size) { return mask_crc32c(crc32c(data, size)); }

}  // namespace sg2::data
