#!/usr/bin/env bash
# Puts PyPI's torch wheel (default 2.11.0: LibTorch 2.x built for CUDA 13.0, the version the lent GPU
# machines run) into a cache with what its libraries and `torchrun` need on a machine without a GPU,
# and prints the cache directory:
#   DIR/torch/share/cmake           CMAKE_PREFIX_PATH of the C++ build (scripts/test_torch_wheel.sh)
#   DIR/nvidia/...                  cuFile, cuSPARSELt and NVSHMEM, the libraries of libtorch_cuda.so
#                                   that the CUDA toolkit (/usr/local/cuda) lacks, where the wheel's
#                                   RUNPATH ($ORIGIN/../../nvidia/...) finds them
#   DIR (as PYTHONPATH)             `python3 -m torch.distributed.run` (torchrun) and its dependencies
# The CUDA toolkit provides the other CUDA libraries (cudart, cuBLAS, cuDNN, NCCL, ...). Downloads
# happen once (about 800 MB); SG2_CACHE_DIR moves the cache (default ~/.cache/stylegan2-cpp).
set -euo pipefail
version=${SG2_TORCH_VERSION:-2.11.0}
# The libraries libtorch_cuda.so of that wheel needs beyond the CUDA 13.0 toolkit.
cuda_extras=("nvidia-cufile==1.15.1.6.*" "nvidia-cusparselt-cu13==0.8.0" "nvidia-nvshmem-cu13==3.4.5")
# torch's Python dependencies, for torchrun (sympy etc. are imported by `import torch`).
python_deps=(numpy filelock "typing-extensions>=4.10.0" "sympy>=1.13.3" "networkx>=2.5.1" jinja2 "fsspec>=0.8.5")

cache_root=${SG2_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stylegan2-cpp}
python_tag=$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
dir="$cache_root/torch-$version-$python_tag"
if [ -e "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi

if ! python3 -m pip --version > /dev/null 2>&1; then
  echo "torch_wheel: installing python3-pip" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi
pip_flags=(-q --disable-pip-version-check --no-input --no-compile --root-user-action=ignore)
# Debian's pip refuses to install outside a virtual environment unless told; --target touches nothing of the system.
python3 -m pip install --help | grep -q -- --break-system-packages && pip_flags+=(--break-system-packages)

echo "torch_wheel: fetching torch==$version and its CUDA extras into $dir (once)" >&2
rm -rf "$dir.partial"
mkdir -p "$dir.partial"
python3 -m pip install "${pip_flags[@]}" --no-deps --target "$dir.partial" "torch==$version" "${cuda_extras[@]}" >&2
python3 -m pip install "${pip_flags[@]}" --target "$dir.partial" "${python_deps[@]}" >&2
for lib in nvidia/cu13/lib/libcufile.so.0 nvidia/cusparselt/lib/libcusparseLt.so.0 nvidia/nvshmem/lib/libnvshmem_host.so.3; do
  [ -e "$dir.partial/$lib" ] || { echo "torch_wheel: $lib missing from the wheels" >&2; exit 1; }
done
[ -e "$dir.partial/torch/share/cmake/Torch/TorchConfig.cmake" ] || { echo "torch_wheel: no TorchConfig.cmake" >&2; exit 1; }
touch "$dir.partial/.complete"
rm -rf "$dir"
mv "$dir.partial" "$dir"
echo "$dir"
