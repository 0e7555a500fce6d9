#!/usr/bin/env bash
# Installs the Debian 12 packages perfc needs, only those missing, with sudo when
# not root.  Called by `make demo` and `make test`; safe to run again.
set -euo pipefail
pkgs=(build-essential cmake re2c lemon llvm-19-dev clang-19 libclang-rt-19-dev
      libzstd-dev zlib1g-dev libopenblas-dev libsqlite3-dev jq python3-numpy
      qemu-user gcc-aarch64-linux-gnu gcc-riscv64-linux-gnu
      libc6-dev-arm64-cross libc6-dev-riscv64-cross chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "perfc setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
