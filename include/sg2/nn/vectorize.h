#pragma once
// SG2_VECTOR_CLONES: compile a hot loop function for AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3)
// and baseline x86-64; the loader picks the best the CPU has (GCC function multiversioning), so
// one binary is fast on new CPUs and still runs on old ones. Elsewhere it expands to nothing.

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__)
#define SG2_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SG2_VECTOR_CLONES
#endif
