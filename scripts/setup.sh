#!/usr/bin/env bash
# Shared setup for scripts/demo.sh and scripts/test.sh: installs missing Debian
# packages, configures and builds rtrace into ${RTRACE_BUILD_DIR:-build}.
# Sourced, not executed.
set -euo pipefail

RTRACE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RTRACE_BUILD_DIR="${RTRACE_BUILD_DIR:-$RTRACE_ROOT/build}"
export RTRACE_ROOT RTRACE_BUILD_DIR

# Every package rtrace builds, tests or demos with (Debian 12 names).
RTRACE_PACKAGES=(
  build-essential cmake pkg-config git gfortran
  libopenmpi-dev openmpi-bin libhdf5-openmpi-dev libhdf5-dev hdf5-tools
  libboost-program-options-dev libgtest-dev googletest nlohmann-json3-dev
  hwloc libhwloc-dev libopenblas-dev
  python3-h5py python3-numpy librsvg2-bin time procps
  gdb  # the stacks of a test app that hangs (tests/tracer/traced_app.hpp)
  slurm-wlm munge iproute2
  patchelf
  clang libclang-rt-14-dev
  libunwind-dev libdw-dev
  libpfm4-dev
  valgrind
  ccache
  likwid
  chromium  # tests/analysis/html_render_test.sh renders the HTML report headless
)

rtrace_log() { printf '[rtrace] %s\n' "$*" >&2; }

rtrace_install_packages() {
  local missing=()
  local p
  for p in "${RTRACE_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    rtrace_log "all Debian packages present"
    return 0
  fi
  rtrace_log "installing: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { rtrace_log "need root or sudo to install: ${missing[*]}"; return 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

rtrace_build() {
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  rtrace_log "configuring in $RTRACE_BUILD_DIR"
  cmake -S "$RTRACE_ROOT" -B "$RTRACE_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTRACE_ENABLE_TESTS=ON \
    ${RTRACE_CMAKE_ARGS:-} >"$RTRACE_BUILD_DIR.configure.log" 2>&1 || {
    cat "$RTRACE_BUILD_DIR.configure.log" >&2
    return 1
  }
  grep -A14 "configuration summary" "$RTRACE_BUILD_DIR.configure.log" | sed 's/^-- //' >&2 || true
  rtrace_log "building with $jobs jobs"
  cmake --build "$RTRACE_BUILD_DIR" -j "$jobs"
}

rtrace_setup() {
  rtrace_install_packages
  rtrace_build
}
