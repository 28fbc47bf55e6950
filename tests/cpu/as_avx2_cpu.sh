#!/usr/bin/env bash
# Runs a test program as an x86-64 CPU without AVX-512 runs it (AVX2 and FMA: Haswell to Zen 3), on a
# machine whose CPU has AVX-512: on Valgrind's synthetic CPU (`valgrind --tool=none`: no checking,
# only its JIT), which offers AVX2 and FMA but not AVX-512, so that LibTorch's kernels (ATen's CPU
# capability), oneDNN's JIT, OpenBLAS and this project's CPU kernel clones (sg2/core/cpu_level.h)
# all take their AVX2 code, as they would there. Where the CPU has no AVX-512 the suite itself is
# that run: exit 77 (skipped). (QEMU's `-cpu max` would do too, but its scalar FMA with a memory
# operand reads 16 bytes, which faults on a float at the end of a page: 7.2 and 10.0 both.)
# Usage: as_avx2_cpu.sh PROGRAM [ARGS...]
set -euo pipefail
if ! grep -qw avx512f /proc/cpuinfo; then
  echo "SKIP: this CPU has no AVX-512, so the suite's own runs take the AVX2 code"
  exit 77
fi
command -v valgrind > /dev/null ||
  { echo "FAIL: valgrind not found (Debian package valgrind; scripts/setup.sh installs it)" >&2; exit 1; }

# The synthetic CPU must lack AVX-512 and have AVX2 and FMA, or this run would test nothing new.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <stdio.h>' 'int main(void) { __builtin_cpu_init();' \
  '  printf("%d %d %d\n", !!__builtin_cpu_supports("avx512f"), !!__builtin_cpu_supports("avx2"),' \
  '         !!__builtin_cpu_supports("fma")); return 0; }' > "$probe/cpu.c"
cc -O1 "$probe/cpu.c" -o "$probe/cpu"
features=$(valgrind --tool=none -q "$probe/cpu")
[ "$features" = "0 1 1" ] ||
  { echo "FAIL: valgrind's CPU offers avx512f avx2 fma = $features, not 0 1 1" >&2; exit 1; }

echo "as an AVX2 CPU: valgrind --tool=none $*"
valgrind --tool=none -q "$@"
