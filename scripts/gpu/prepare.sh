#!/usr/bin/env bash
# Run on the Debian CPU machine before a GPU session: gathers into .gpu-kit/ (git-ignored) what
# scripts/gpu/run.sh needs on a GPU machine that has PyTorch, the CUDA toolkit and nothing of ours,
# and that reaches no package registry:
#   .gpu-kit/debs/       Debian 12 packages of the build's libraries and the Fashion-MNIST files
#   .gpu-kit/fixtures/   the parity fixture (../shared/fixtures/parity_tiny.*)
#   .gpu-kit/reference/  config-f's reference parameter names (../shared/reference)
#   .gpu-kit/stylegan2-ada-pytorch/  the reference implementation, for scripts/bench/gpu_vs_reference.sh,
#                        from a git directory (SG2_REFERENCE_GIT; default: the session tool's fetch
#                        mirror) or a checkout (SG2_REFERENCE_DIR); never committed
# Then carry it: device run with carry [".gpu-kit"] and the command scripts/gpu/run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=.gpu-kit
packages=(
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7
  libprotobuf-dev libprotobuf32 protobuf-compiler libprotoc32 libcli11-dev nlohmann-json3-dev
  libgtest-dev libpng-dev libpng16-16 zlib1g-dev libjpeg62-turbo-dev libjpeg62-turbo
  dataset-fashion-mnist
)
rm -rf "$kit"
mkdir -p "$kit/debs" "$kit/fixtures"
(cd "$kit/debs" && apt-get download -qq "${packages[@]}")
shared=${SG2_SHARED_DIR:-../shared}
if [ -f "$shared/fixtures/parity_tiny.pt" ]; then
  cp "$shared/fixtures/parity_tiny.pt" "$shared/fixtures/parity_tiny.json" "$kit/fixtures/"
  cp -r "$shared/reference" "$kit/reference"
else
  echo "prepare: no $shared/fixtures/parity_tiny.pt; the kit will skip the parity check" >&2
fi
reference_git=${SG2_REFERENCE_GIT:-/work/.mirror/NVlabs+stylegan2-ada-pytorch/repo}
if [ -n "${SG2_REFERENCE_DIR:-}" ]; then
  cp -r "$SG2_REFERENCE_DIR" "$kit/stylegan2-ada-pytorch"
elif [ -d "$reference_git" ]; then
  mkdir -p "$kit/stylegan2-ada-pytorch"
  git --git-dir "$reference_git" archive HEAD | tar -x -C "$kit/stylegan2-ada-pytorch"
else
  echo "prepare: no stylegan2-ada-pytorch (set SG2_REFERENCE_GIT or SG2_REFERENCE_DIR); gpu_vs_reference.sh will not run" >&2
fi
grep -qx '/.gpu-kit/' .gitignore 2>/dev/null || grep -qx '/.gpu-kit/' .git/info/exclude 2>/dev/null ||
  echo '/.gpu-kit/' >> .git/info/exclude
du -sh "$kit"
echo "prepare: done; carry .gpu-kit and run scripts/gpu/run.sh on the GPU machine"
