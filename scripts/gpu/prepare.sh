#!/usr/bin/env bash
# Run on the Debian CPU machine before a GPU session: gathers into .gpu-kit/ (git-ignored) what
# scripts/gpu/run.sh needs on a GPU machine that has PyTorch, the CUDA toolkit and nothing of ours,
# and that reaches no package registry:
#   .gpu-kit/debs/       Debian 12 packages of the build's libraries, and fashion-mnist-train.tar: the
#                        training split's files of the dataset-fashion-mnist package (the kit never
#                        reads the test split's 4.4 MB, and a device call takes 64 MiB in all)
#   .gpu-kit/fixtures/   the parity fixture (../shared/fixtures/parity_tiny.*)
#   .gpu-kit/reference/  config-f's reference parameter names (../shared/reference)
#   .gpu-kit/stylegan2-ada-pytorch/  the reference implementation, for scripts/bench/gpu_vs_reference.sh,
#                        from a git directory (SG2_REFERENCE_GIT; default: the session tool's fetch
#                        mirror) or a checkout (SG2_REFERENCE_DIR); never committed
#   .gpu-kit/prebuilt/   with --prebuilt: the programs (training, bench, metrics, dataset, import) and the
#                        test binaries with CUDA tests, built here
#                        against PyPI's torch wheel (scripts/torch_wheel.sh: the lent machines' PyTorch) and the CUDA
#                        toolkit, without MPI or tcmalloc (the GPU machines have neither), stripped;
#                        run.sh uses them where that machine's torch.__version__ is the wheel's, so
#                        that no device call spends minutes compiling (SG2_KIT_BUILD=1 builds anyway)
# Then carry it: device run with carry [".gpu-kit"] and the command scripts/gpu/run.sh.
#   scripts/gpu/prepare.sh [--prebuilt]
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/kit_steps.sh  # torch_version_in
kit=.gpu-kit
prebuilt=0
case "${1:-}" in
  --prebuilt) prebuilt=1 ;;
  "") ;;
  *) echo "usage: scripts/gpu/prepare.sh [--prebuilt]" >&2; exit 2 ;;
esac
# The GPU machines' binaries, built here: against the torch wheel, with CUDA and NCCL, no MPI.
build_prebuilt() {  # build_prebuilt KIT_PREBUILT_DIR BUILD_DIR
  local dest=$1 build=$2 wheel_dir
  wheel_dir=$(scripts/torch_wheel.sh)
  BUILD_DIR=$build SG2_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$wheel_dir/torch/share/cmake -DSG2_WITH_CUDA=ON \
-DSG2_WITH_NCCL=ON -DSG2_WITH_MPI=OFF -DSG2_WITH_TCMALLOC=OFF" scripts/build.sh
  # What run.sh and the bench scripts run on a GPU: the programs, and the test binaries with CUDA
  # tests (the other test binaries are those the CPU suite runs in CI), stripped and packed.
  local staging
  staging=$(mktemp -d)
  mkdir -p "$dest" "$staging/bin" "$staging/tests"
  cp "$build"/bin/{stylegan2_train,stylegan2_bench,stylegan2_metrics,stylegan2_dataset,stylegan2_import} \
      "$build"/bin/{test_ops,test_nn,test_device,test_train,test_metrics} \
      "$staging/bin/"
  cp "$build"/tests/{test_dist,parity_check} "$staging/tests/"
  strip "$staging"/bin/* "$staging"/tests/*
  tar -czf "$dest/binaries.tar.gz" -C "$staging" bin tests
  rm -rf "$staging"
  torch_version_in "$wheel_dir/torch" > "$dest/torch-version"
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include apps tests || echo ' with local changes')" \
    > "$dest/commit"
  echo "prepare: prebuilt binaries of $(cat "$dest/commit") against torch $(cat "$dest/torch-version")"
}

# What the binaries load, the data, and ninja (the reference's plugins build with it); then, where the
# GPU machine builds (no --prebuilt), the headers and the compiler of the protobuf messages. A kit with
# --prebuilt leaves those out: a device call takes 64 MiB, and the prebuilt binaries fill a third of it.
packages=(libspdlog1.10 libfmt9 libyaml-cpp0.7 libprotobuf32 libpng16-16 libjpeg62-turbo dataset-fashion-mnist ninja-build)
[ "$prebuilt" = 1 ] || packages+=(
  libspdlog-dev libfmt-dev libyaml-cpp-dev libprotobuf-dev protobuf-compiler libprotoc32 libcli11-dev
  nlohmann-json3-dev libgtest-dev libpng-dev zlib1g-dev libjpeg62-turbo-dev)
rm -rf "$kit"
mkdir -p "$kit/debs" "$kit/fixtures"
(cd "$kit/debs" && apt-get download -qq "${packages[@]}")
keep_fashion_mnist_training_split() {  # the package's train-*.gz as a tar of the same paths, then no package
  local deb files=usr/share/datasets/fashion-mnist staging
  deb=$(ls "$kit"/debs/dataset-fashion-mnist_*.deb)
  staging=$(mktemp -d)
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$staging" "./$files/train-images-idx3-ubyte.gz" \
    "./$files/train-labels-idx1-ubyte.gz"
  tar -cf "$kit/debs/fashion-mnist-train.tar" -C "$staging" usr
  rm -rf "$staging" "$deb"
}
keep_fashion_mnist_training_split
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
if [ "$prebuilt" = 1 ]; then
  build_prebuilt "$kit/prebuilt" "${SG2_KIT_BUILD_DIR:-build-gpu-kit}"
fi
grep -qx '/.gpu-kit/' .gitignore 2>/dev/null || grep -qx '/.gpu-kit/' .git/info/exclude 2>/dev/null ||
  echo '/.gpu-kit/' >> .git/info/exclude
# A device call sends the working tree (tracked and untracked files that git does not ignore) with
# the carried .gpu-kit, and refuses the call where they pass 64 MiB (the device tool's README).
limit_mib=64
tree_bytes=$({ git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null || true; } |
  tail -n 1 | cut -f1)
kit_bytes=$(du -sb "$kit" | cut -f1)
sent_bytes=$((tree_bytes + kit_bytes))
echo "prepare: a device call would send $((sent_bytes >> 20)) MiB (the tree $((tree_bytes >> 20)) MiB, $kit" \
  "$((kit_bytes >> 20)) MiB) of the $limit_mib MiB it takes"
if [ "$sent_bytes" -gt $((limit_mib << 20)) ] && [ -d "$kit/fixtures" ]; then
  echo "prepare: leaving the parity fixture out of $kit to fit (the kit's parity step then checks ours only)"
  sent_bytes=$((sent_bytes - $(du -sb "$kit/fixtures" | cut -f1)))
  rm -rf "$kit/fixtures"
fi
if [ "$sent_bytes" -gt $((limit_mib << 20)) ]; then
  echo "prepare: that is more than a device call takes; remove untracked files or leave packages out of $kit" >&2
  exit 1
fi
echo "prepare: done; carry .gpu-kit and run scripts/gpu/session.sh first (then second) on the GPU machine"
