#pragma once
// x86-64 instruction-set levels of the hand-written CPU kernels. A kernel's hot loop is compiled
// once per level (SG2_TARGET_AVX512 / SG2_TARGET_AVX2 functions beside a baseline one) and picks
// the clone for cpu_level() at run time, so one binary is fast on new CPUs and still runs on old
// ones, and tests can run every clone the CPU has by forcing the level.
//
//   Baseline  x86-64 (SSE2)                  every x86-64 CPU
//   Avx2      x86-64-v3 (AVX2, FMA, BMI2)    Haswell / Zen and later
//   Avx512    x86-64-v4 (AVX-512 F/BW/DQ/VL)  Skylake-SP / Zen 4 and later
//
// The level used is the best the CPU supports, or a lower one forced with force_cpu_level() or
// the environment variable SG2_CPU_LEVEL=baseline|avx2|avx512 (read at the first call).

#include <string>
#include <utility>
#include <vector>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__)
#define SG2_CPU_CLONES 1
#define SG2_TARGET_AVX512 __attribute__((target("arch=x86-64-v4")))
#define SG2_TARGET_AVX2 __attribute__((target("arch=x86-64-v3")))
#else
#define SG2_CPU_CLONES 0
#define SG2_TARGET_AVX512
#define SG2_TARGET_AVX2
#endif
// Inlined into each clone, so it is compiled for that clone's level.
#define SG2_INLINE_IN_CLONES inline __attribute__((always_inline))

namespace sg2::cpu {

enum class Level { Baseline = 0, Avx2 = 1, Avx512 = 2 };

std::string to_string(Level level);
Level parse_level(const std::string& name);  // baseline, avx2, avx512; anything else throws

Level best_supported_level();            // of this CPU (Baseline where clones are not built)
std::vector<Level> supported_levels();   // Baseline up to best_supported_level()
Level cpu_level();                       // the level the kernels run now
// Runs the kernels at `level` from now on; throws if the CPU does not support it.
void force_cpu_level(Level level);

// The clones of a kernel's hot loop: Body (an SG2_INLINE_IN_CLONES function) inlined into one
// function per level, each compiled for it.
template <auto Body, typename... Args>
SG2_TARGET_AVX512 void run_avx512_clone(Args&&... args) {
  Body(std::forward<Args>(args)...);
}
template <auto Body, typename... Args>
SG2_TARGET_AVX2 void run_avx2_clone(Args&&... args) {
  Body(std::forward<Args>(args)...);
}
template <auto Body, typename... Args>
void run_baseline_clone(Args&&... args) {
  Body(std::forward<Args>(args)...);
}

// Runs Body(args...) in the clone for cpu_level().
template <auto Body, typename... Args>
void run_at_cpu_level(Args&&... args) {
  switch (cpu_level()) {
    case Level::Avx512: return run_avx512_clone<Body>(std::forward<Args>(args)...);
    case Level::Avx2: return run_avx2_clone<Body>(std::forward<Args>(args)...);
    case Level::Baseline: return run_baseline_clone<Body>(std::forward<Args>(args)...);
  }
}

}  // namespace sg2::cpu
