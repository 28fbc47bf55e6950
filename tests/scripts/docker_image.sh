#!/usr/bin/env bash
# docker/Dockerfile against what the tests build: it starts from NVIDIA's NGC PyTorch image, expects
# the LibTorch version the tests build against (scripts/torch_wheel.sh), builds through
# scripts/build.sh, and the manual shows the image's docker run and srun --container-image lines.
# Where SG2_DOCKER_BUILD=1 and a Docker engine runs, the image is built and its stylegan2_train
# prints its help; elsewhere that part is skipped with a note (no engine on the CI machines).
# Usage: docker_image.sh SOURCE_DIR
set -euo pipefail
src=$1
dockerfile=$src/docker/Dockerfile
fail() { echo "FAIL: $*" >&2; exit 1; }

grep -q '^FROM nvcr.io/nvidia/pytorch:${NGC_TAG}$' "$dockerfile" || fail "the Dockerfile is not on the NGC PyTorch image"
wheel_version=$(sed -n 's/^version=\${SG2_TORCH_VERSION:-\([0-9.]*\)}$/\1/p' "$src/scripts/torch_wheel.sh")
[ -n "$wheel_version" ] || fail "no default torch version in scripts/torch_wheel.sh"
image_minor=$(sed -n 's/^ARG TORCH_MINOR=\([0-9.]*\)$/\1/p' "$dockerfile")
[ "$image_minor" = "${wheel_version%.*}" ] ||
  fail "the Dockerfile expects torch $image_minor, the tests build against $wheel_version"
grep -q "scripts/build.sh" "$dockerfile" || fail "the Dockerfile does not build through scripts/build.sh"
grep -q "torch.utils.cmake_prefix_path" "$dockerfile" || fail "the Dockerfile does not build against the image's LibTorch"
for line in "docker build -f docker/Dockerfile -t stylegan2-cpp ." "docker run --gpus all" "--container-image="; do
  grep -qF -- "$line" "$src/docs/building.md" || fail "docs/building.md lacks '$line'"
done

if [ "${SG2_DOCKER_BUILD:-0}" = 1 ] && docker info > /dev/null 2>&1; then
  docker build -f "$dockerfile" -t stylegan2-cpp-test "$src"
  help=$(docker run --rm stylegan2-cpp-test stylegan2_train --help)
  grep -q -- "--config" <<< "$help" || fail "the image's stylegan2_train"
  echo "docker_image: the image was built and runs"
else
  echo "note: the image itself is built only where SG2_DOCKER_BUILD=1 and a Docker engine runs"
fi
echo "docker_image: all checks passed"
