#!/usr/bin/env bash
# What the compiler made of the CUDA kernels, with no GPU: per kernel of src/ops/cuda/fir_bias_act_kernels.cu,
# its instruction count and the instructions that cost (global loads, the MUFU.RCP of each integer
# division, local-memory spills, FFMA, and the 16-byte loads and stores), read off the SASS of the built object with cuobjdump (PyPI's
# nvidia-cuda-cuobjdump, fetched once into the cache beside the torch wheel).
#   scripts/bench/kernel_sass.sh [BUILD_DIR] [ARCH]     # default build-gpu-kit (scripts/gpu/prepare.sh --prebuilt), sm_90
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu-kit}
arch=${2:-sm_90}
object="$build/src/ops/CMakeFiles/sg2_ops.dir/cuda/fir_bias_act_kernels.cu.o"
[ -f "$object" ] || { echo "kernel_sass: no $object (build with CUDA first: scripts/gpu/prepare.sh --prebuilt)" >&2; exit 1; }
cache=${SG2_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stylegan2-cpp}/cuobjdump
tools="$cache/nvidia/cu13/bin"
if [ ! -x "$tools/cuobjdump" ] || [ ! -x "$tools/nvdisasm" ]; then
  rm -rf "$cache.partial" && mkdir -p "$cache.partial"
  python3 -m pip download -q --disable-pip-version-check --no-deps -d "$cache.partial" nvidia-cuda-cuobjdump \
      nvidia-cuda-nvdisasm >&2
  for wheel in "$cache.partial"/*.whl; do python3 -m zipfile -e "$wheel" "$cache.partial"; done
  chmod +x "$cache.partial"/nvidia/cu13/bin/*
  rm -rf "$cache" && mv "$cache.partial" "$cache"
fi
sass=$(mktemp)
trap 'rm -f "$sass"' EXIT
PATH="$tools:$PATH" cuobjdump -sass -arch "$arch" "$object" > "$sass"
python3 - "$sass" <<'PY'
import re, sys
print("| kernel | instructions | LDG | MUFU (divisions) | LDL + STL | FFMA | 16-byte LDG + STG |")
print("|---|---|---|---|---|---|---|")
for function in re.split(r"\n\s*Function : ", open(sys.argv[1]).read())[1:]:
    name = function.split("\n", 1)[0]
    opcodes = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P[0-9T] )?([A-Z][A-Z0-9_.]*)", function)
    ops = [o.split(".")[0] for o in opcodes]
    kernel = re.search(r"\d\d(upfirdn2d_kernel|upfirdn2d_tiled_kernel|upfirdn2d_lanes_kernel|upfirdn2d_staged_kernel|bias_act_kernel|bias_act_grad_kernel|"
                       r"bias_act_lanes_kernel|bias_act_grad_lanes_kernel|conv_epilogue_kernel|"
                       r"conv_epilogue_grad_kernel|conv_epilogue_grad_pixels_kernel)I(.*)", name)
    label = name
    if kernel:  # the template arguments, demangled enough to read: storage type, then index type or the fixed shape
        args = kernel.group(2)
        types = {"13__nv_bfloat16": "bfloat16", "6__half": "float16", "f": "float32"}
        storage = next(t for t in types if args.startswith(t))
        rest = args[len(storage):]
        shape = re.match(r"NS1_8FixedFirILi(\d)ELi(\d)ELi(\d)E", rest)
        index_or_layout = {"i": "int32", "l": "int64", "Lb0E": "NCHW", "Lb1E": "channels_last"}
        detail = next((d for code, d in index_or_layout.items() if rest.startswith(code)), None)
        if shape:
            detail = f"up {shape[1]} down {shape[2]} taps {shape[3]}"
        label = f"{kernel.group(1)}<{types[storage]}{', ' + detail if detail else ''}>"
    count = lambda op: sum(1 for o in ops if o == op)
    wide = sum(1 for o in opcodes if o.split(".")[0] in ("LDG", "STG") and ".128" in o)
    print(f"| {label} | {len(ops)} | {count('LDG')} | {count('MUFU')} | {count('LDL') + count('STL')} | {count('FFMA')} | {wide} |")
PY
