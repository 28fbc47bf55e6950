#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those that are missing (Debian 12, as root
# or with sudo). Called by scripts/test.sh and scripts/quickstart.sh; safe to run again.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  libtorch-dev libopenblas0-pthread
  libopenmpi-dev openmpi-bin
  libprotobuf-dev protobuf-compiler
  libcli11-dev libspdlog-dev libfmt-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libpng-dev libjpeg62-turbo-dev zlib1g-dev
  libgoogle-perftools-dev
  libgloo-dev iproute2 slurm-wlm munge
  python3 python3-protobuf python3-pip python3-pil gnuplot-nox
  valgrind universal-ctags
  dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
