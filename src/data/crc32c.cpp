#include "sg2/data/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sg2::data {

namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // reflected Castagnoli polynomial

// tables[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8).
using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

SliceTables make_tables() {
  SliceTables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    tables[0][byte] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint32_t previous = tables[k - 1][byte];
      tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xffu];
    }
  }
  return tables;
}

const SliceTables& tables() {
  static const SliceTables instance = make_tables();
  return instance;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const uint8_t* p, size_t size, uint32_t crc) {
  uint64_t state = ~crc;
  for (; size > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0; --size) state = _mm_crc32_u8(uint32_t(state), *p++);
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    state = _mm_crc32_u64(state, word);
  }
  for (; size > 0; --size) state = _mm_crc32_u8(uint32_t(state), *p++);
  return ~uint32_t(state);
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc) {
  const auto& t = tables();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t state = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    const uint32_t low = state ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    state = t[7][low & 0xffu] ^ t[6][(low >> 8) & 0xffu] ^ t[5][(low >> 16) & 0xffu] ^ t[4][low >> 24] ^
            t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; size > 0; --size) state = (state >> 8) ^ t[0][(state ^ *p++) & 0xffu];
  return ~state;
}

bool crc32c_hardware_available() {
#if defined(__x86_64__)
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
#else
  return false;
#endif
}

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
#if defined(__x86_64__)
  if (crc32c_hardware_available()) return crc32c_sse42(static_cast<const uint8_t*>(data), size, crc);
#endif
  return crc32c_portable(data, size, crc);
}

}  // namespace sg2::data
