#!/usr/bin/env bash
# scripts/bundle.sh: a self-contained rtrace for GPU (and CPU) nodes that have
# no network and none of HDF5, Boost, hwloc or MPI installed.
#
#   scripts/bundle.sh [--build-dir DIR] [--output DIR] [--no-tar]
#
# Makes OUTPUT/rtrace-<version>-linux-x86_64/ (and a .tar.gz next to it):
#   bin/    rtrace, rtrace-smid-probe (CUDA builds: the sms points' measured SMs), the demos (rtrace-demo, -mpi, -cuda where built), rtrace-demo-check
#   lib/    librtrace_* (the tracer included) and every shared library they load,
#           except glibc (libc, libm, libpthread, libdl, librt, libresolv, ld-linux, ...)
#           and the NVIDIA driver (libcuda); every ELF file of ours gets RUNPATH
#           $ORIGIN/../lib, so it needs no LD_LIBRARY_PATH. CUDA builds add CUPTI
#           from the toolkit they were built with (libcupti.so.13, libnvperf_host.so,
#           libnvperf_target.so: a bare GPU node has only the driver, and the tracer
#           is built against this CUPTI), copied byte for byte: NVIDIA's EULA lets
#           them be redistributed only unmodified, so they are neither stripped nor
#           patched (docs/tracer.md, "CUPTI in the bundle"); the tracer loads
#           lib/libcupti.so.13 first and the libnvperf_* beside it.
#   tests/gpu/{validate.sh,first-run.sh,gpu_spec.sh}, share/rtrace/{schemas,examples,licenses}, BUNDLE.txt
# glibc comes from the node, so the node's must be at least as new as this
# machine's (BUNDLE.txt names the version the bundle needs; Debian 12: 2.36):
# for older nodes run this script on their distribution.
# OpenMPI's libraries are bundled because the parallel HDF5 links them; nothing
# calls MPI_Init unless the application is an MPI program, so single-process
# sweeps (threads, sms) need no MPI installation. MPI programs use the node's MPI.
#
# Without --build-dir, configures and builds build-bundle/ (Release, tests off,
# RTRACE_NATIVE=OFF so the binaries run on any x86-64 CPU). With --build-dir,
# bundles that build as it is (it warns when it was built with -march=native).
# Fails (exit 1) when the bundle exceeds 100 MiB unpacked (CUPTI is 41 MiB of it,
# libnvperf_host.so alone 31 MiB) or a library is missing.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD=""
OUTPUT="$SRC/dist"
MAKE_TAR=1
MAX_BYTES=$((100 * 1024 * 1024))

die() { echo "bundle.sh: $*" >&2; exit 1; }
usage() { echo "usage: $0 [--build-dir DIR] [--output DIR] [--no-tar]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || usage; BUILD="$2"; shift ;;
    --output) [ $# -ge 2 ] || usage; OUTPUT="$2"; shift ;;
    --no-tar) MAKE_TAR=0 ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "bundle.sh: unknown argument \`$1'" >&2; usage ;;
  esac
  shift
done
for tool in patchelf ldd strip tar; do
  command -v "$tool" >/dev/null || die "needs \`$tool' (Debian: apt-get install patchelf binutils; scripts/setup.sh installs it)"
done

if [ -z "$BUILD" ]; then
  BUILD="$SRC/build-bundle"
  echo "bundle.sh: building rtrace in $BUILD (Release, portable ISA)" >&2
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRTRACE_ENABLE_TESTS=OFF -DRTRACE_NATIVE=OFF "${launcher[@]}" \
    >"$BUILD.configure.log" 2>&1 ||
    die "configure failed, see $BUILD.configure.log"
  targets=(rtrace rtrace_tracer rtrace-demo rtrace-demo-check)
  grep -q '^RTRACE_ENABLE_MPI:BOOL=ON' "$BUILD/CMakeCache.txt" && targets+=(rtrace-demo-mpi)
  grep -q '^RTRACE_ENABLE_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" && targets+=(rtrace-demo-cuda)
  cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" >&2 || die "build failed"
fi
BUILD="$(cd "$BUILD" && pwd)"
[ -x "$BUILD/bin/rtrace" ] || die "$BUILD/bin/rtrace is missing: build rtrace first (or drop --build-dir)"
[ -f "$BUILD/lib/librtrace_tracer.so" ] || die "$BUILD/lib/librtrace_tracer.so is missing: build the rtrace_tracer target"
if grep -q '^RTRACE_NATIVE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "bundle.sh: warning: $BUILD was built with -march=native (RTRACE_NATIVE=ON): the bundle runs only on CPUs with this host's ISA" >&2
fi

VERSION="$("$BUILD/bin/rtrace" --version 2>/dev/null | grep -o '[0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*' | head -1)"
[ -n "$VERSION" ] || die "cannot read the version from $BUILD/bin/rtrace --version"
NAME="rtrace-$VERSION-linux-x86_64"
mkdir -p "$OUTPUT"
OUTPUT="$(cd "$OUTPUT" && pwd)"
DEST="$OUTPUT/$NAME"
rm -rf "$DEST" "$DEST.tar.gz"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/tests/gpu" "$DEST/share/rtrace/examples"

# ---- what goes in: the programs, the tracer, then everything they load
programs=()
for exe in rtrace rtrace-smid-probe rtrace-demo rtrace-demo-mpi rtrace-demo-cuda rtrace-demo-check; do
  [ -x "$BUILD/bin/$exe" ] && programs+=("$BUILD/bin/$exe")
done
roots=("${programs[@]}" "$BUILD/lib/librtrace_tracer.so")

# glibc (the node's own, must match its loader), the driver and the CUDA toolkit.
is_excluded() {
  case "$1" in
    linux-vdso.so*|ld-linux*.so*|libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*|\
    libresolv.so.*|libutil.so.*|libanl.so.*|libnss_*|libthread_db.so.*|libBrokenLocale.so.*|\
    libcuda.so*|libnvidia-*|libcupti.so*|libnvperf*|libcudart.so*|libnvrtc*|libcublas*|libnccl*) return 0 ;;
  esac
  return 1
}

declare -A libs=()   # soname -> resolved path
for f in "${roots[@]}"; do
  while read -r line; do
    case "$line" in
      *"=> not found"*) die "$(basename "$f") needs ${line%% *}, which this machine does not have" ;;
      *"=> "/*)
        soname="${line%% *}"
        path="${line#*=> }"; path="${path%% (*}"
        is_excluded "$soname" || libs["$soname"]="$path"
        ;;
    esac
  done < <(ldd "$f")
done

for p in "${programs[@]}"; do cp "$p" "$DEST/bin/"; done
cp "$BUILD/lib/librtrace_tracer.so" "$DEST/lib/"
for soname in "${!libs[@]}"; do cp -L "${libs[$soname]}" "$DEST/lib/$soname"; done
# The launcher looks for lib/librtrace_tracer.so; its own dependencies by soname.

# Our own binaries carry debug info in RelWithDebInfo builds; the bundle does not.
# (CUPTI is copied after this loop: NVIDIA's files must stay unmodified.)
chmod u+w "$DEST"/bin/* "$DEST"/lib/*
for f in "$DEST"/bin/* "$DEST"/lib/*; do
  strip --strip-unneeded "$f" 2>/dev/null || strip "$f" 2>/dev/null || true
  # RUNPATH of every ELF (binaries and libraries): lib/ is both $ORIGIN/../lib of
  # bin/ and of lib/ itself, so a library's own dependencies resolve there too
  # (RUNPATH, unlike RPATH, is not inherited by dependencies).
  patchelf --set-rpath '$ORIGIN/../lib' "$f" || die "patchelf --set-rpath failed on $f"
done

# ---- CUPTI for the tracer's CUDA modes (CUDA builds): the toolkit's files, unmodified
cupti_files=()
if grep -q '^RTRACE_ENABLE_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  cuda_lib_dirs=()
  for d in "$(sed -n 's/^CUDAToolkit_LIBRARY_DIR:[A-Z]*=//p' "$BUILD/CMakeCache.txt")" \
           "$(sed -n 's/^CUDAToolkit_LIBRARY_ROOT:[A-Z]*=//p' "$BUILD/CMakeCache.txt")/extras/CUPTI/lib64" \
           "${CUDA_HOME:-/usr/local/cuda}/extras/CUPTI/lib64" "${CUDA_HOME:-/usr/local/cuda}/lib64"; do
    [ -n "$d" ] && [ -f "$d/libcupti.so.13" ] && cuda_lib_dirs+=("$d")
  done
  [ "${#cuda_lib_dirs[@]}" -gt 0 ] ||
    die "a CUDA build needs CUPTI in the bundle, but libcupti.so.13 is under none of the toolkit's library directories (set CUDA_HOME)"
  cupti_dir="${cuda_lib_dirs[0]}"
  for f in libcupti.so.13 libnvperf_host.so libnvperf_target.so; do
    [ -f "$cupti_dir/$f" ] || die "$cupti_dir/$f is missing: CUPTI needs it for metrics"
    cp -L "$cupti_dir/$f" "$DEST/lib/$f"
    cmp -s "$cupti_dir/$f" "$DEST/lib/$f" || die "copying $f changed it"
    cupti_files+=("$f")
  done
  # The license they come with (the CUDA EULA; its Attachment A lists what may be redistributed).
  mkdir -p "$DEST/share/rtrace/licenses"
  eula=""
  for f in "$cupti_dir/../EULA.txt" "${CUDA_HOME:-/usr/local/cuda}/EULA.txt" \
           "${CUDA_HOME:-/usr/local/cuda}"/dist-info/nvidia_cuda_cupti-*/licenses/License.txt; do
    [ -f "$f" ] && { eula="$f"; break; }
  done
  if [ -n "$eula" ]; then cp "$eula" "$DEST/share/rtrace/licenses/NVIDIA-CUDA-EULA.txt"
  else echo "bundle.sh: warning: the CUDA EULA was not found next to the toolkit; the bundle ships CUPTI without it" >&2; fi
fi

# ---- scripts, schemas, an example run file, a note on what the node must have
for f in validate.sh first-run.sh gpu_spec.sh; do cp "$SRC/tests/gpu/$f" "$DEST/tests/gpu/$f"; done
chmod +x "$DEST/tests/gpu/validate.sh" "$DEST/tests/gpu/first-run.sh"
cp -r "$SRC/schemas" "$DEST/share/rtrace/schemas"
cp "$SRC/tests/fuzz/corpus/run_file/run-2points-traced.h5" "$DEST/share/rtrace/examples/run-2points-traced.h5"

glibc_needed="$(for f in "$DEST"/bin/* "$DEST"/lib/*; do objdump -T "$f" 2>/dev/null; done |
  grep -o 'GLIBC_[0-9][0-9.]*' | sort -t. -k1,1 -k2,2n -k3,3n -u | tail -1)"
cuda_version="$(grep -o 'CMAKE_CUDA_COMPILER_VERSION:[A-Z]*=[0-9.]*' "$BUILD/CMakeCache.txt" 2>/dev/null | sed 's/.*=//' || true)"
[ -n "$cuda_version" ] || cuda_version="$(sed -n 's/^CUDAToolkit_VERSION:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)"
{
  echo "rtrace $VERSION, self-contained bundle for linux-x86_64"
  echo
  echo "Built $(date -u +%Y-%m-%d) from $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo 'a source tree')."
  echo
  echo "The node must provide:"
  echo "  - glibc with ${glibc_needed:-GLIBC_2.17} or newer (libc, libm, libpthread, libdl, librt, libresolv, ld-linux)"
  if [ "${#cupti_files[@]}" -gt 0 ]; then
    echo "  - for GPUs: the NVIDIA driver (libcuda.so.1) of CUDA ${cuda_version:-13} or newer. CUPTI ${cuda_version:-13}"
    echo "    is in lib/ (${cupti_files[*]}, NVIDIA's files, unmodified;"
    echo "    share/rtrace/licenses/NVIDIA-CUDA-EULA.txt); RTRACE_CUPTI_LIB=PATH makes the tracer use another."
    echo "    GPU performance counters need permission: root, or the driver's NVreg_RestrictProfilingToAdminUsers=0."
  else
    echo "  - for GPUs: nothing (this bundle was built without CUDA)"
  fi
  echo "  - for MPI programs: the node's MPI and its launcher (mpirun, srun); single-process sweeps need none."
  echo "    lib/ holds the OpenMPI 4 libraries HDF5 was built with (libmpi.so.40): an app built with"
  echo "    OpenMPI 4 or 5 shares them; an app built with another MPI (MPICH, Intel MPI: libmpi.so.12)"
  echo "    would load two MPIs under the tracer: trace such apps with an rtrace built against that MPI"
  echo
  echo "Everything else is in lib/ (RUNPATH \$ORIGIN/../lib): no LD_LIBRARY_PATH needed."
  echo
  echo "  bin/rtrace --help"
  echo "  bin/rtrace ert --list-gpus"
  echo "  tests/gpu/first-run.sh --bundle . OUT    # the first checks on a GPU, cheapest first (docs/validation/)"
  echo "  tests/gpu/validate.sh --bundle . OUT     # the GPU validation (docs/validation/)"
  echo
  echo "Contents:"
  (cd "$DEST" && find bin lib tests share -type f | sort | sed 's/^/  /')
} >"$DEST/BUNDLE.txt"

bytes="$(du -sb "$DEST" | cut -f1)"
if [ "$bytes" -gt "$MAX_BYTES" ]; then
  die "the bundle is $((bytes / 1048576)) MiB unpacked, more than the 100 MiB limit (largest: $(cd "$DEST" && du -ab bin lib | sort -n | tail -3 | awk '{printf "%s %d MiB; ", $2, $1/1048576}'))"
fi
if [ "$MAKE_TAR" -eq 1 ]; then
  tar -C "$OUTPUT" -czf "$DEST.tar.gz" "$NAME"
  echo "bundle.sh: $DEST ($((bytes / 1048576)) MiB, ${#libs[@]} libraries) and $DEST.tar.gz ($(( $(stat -c %s "$DEST.tar.gz") / 1048576 )) MiB)"
else
  echo "bundle.sh: $DEST ($((bytes / 1048576)) MiB, ${#libs[@]} libraries)"
fi
