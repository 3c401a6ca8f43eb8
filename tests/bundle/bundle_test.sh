#!/usr/bin/env bash
# bundle_test.sh SRC BUILD WORK: scripts/bundle.sh makes a bundle of BUILD that
# runs inside a root holding nothing but the bundle and glibc (a chroot made
# here, with /proc and /dev/null, /dev/zero, /dev/urandom):
#   - every program and library of the bundle resolves all its libraries inside
#     the root (ld.so --list), and a copy of rtrace without the bundle's lib/
#     does not start there (so the root really lacks the host's libraries);
#   - rtrace --help, --version, `rtrace validate` and `rtrace analyze --html` of
#     the shipped example run file;
#   - `rtrace --sweep threads=1 -- rtrace-demo triad` under the bundled tracer,
#     and the run file it writes validates and holds the demo's triad region;
#   - `rtrace ert --list-gpus` says "no GPU found" in one line, non-zero exit;
#   - rtrace-demo-cuda (when built) starts and says "no GPU found" (exit 2);
#   - CUDA builds: CUPTI in lib/ (libcupti.so.13, libnvperf_host.so,
#     libnvperf_target.so) byte-identical to the toolkit's, with the CUDA EULA;
#     and the bundled tracer finds it inside the root: a driver-API app under
#     `rtrace --tracer cuda` (the test fake of libcuda.so.1, against which the
#     real CUPTI refuses cuptiSubscribe) makes its point `failed` with a line
#     naming /opt/rtrace/lib/libcupti.so.13, never `ok` with nothing traced;
#   - unpacked size <= 100 MiB (bundle.sh enforces it; checked again here).
# Needs root (chroot, mount); exits 77 (skip) otherwise.
set -uo pipefail
SRC=$1 BUILD=$2 WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ] || ! command -v chroot >/dev/null || ! command -v unshare >/dev/null; then
  echo "skipped: needs root, chroot and unshare"
  exit 77
fi
rm -rf "$WORK"
mkdir -p "$WORK"

# ---- the bundle
"$SRC/scripts/bundle.sh" --build-dir "$BUILD" --output "$WORK/dist" 2>&1 | tail -3
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "scripts/bundle.sh exited ${PIPESTATUS[0]}"
bundle=$(ls -d "$WORK"/dist/rtrace-*-linux-x86_64 2>/dev/null | head -1)
[ -n "$bundle" ] && [ -x "$bundle/bin/rtrace" ] || fail "no bundle under $WORK/dist"
[ -f "$bundle.tar.gz" ] || fail "no $bundle.tar.gz"
bytes=$(du -sb "$bundle" | cut -f1)
tarbytes=$(stat -c %s "$bundle.tar.gz")
echo "bundle: $((bytes / 1024)) KiB unpacked, $((tarbytes / 1024)) KiB .tar.gz, $(ls "$bundle/lib" | wc -l) libraries"
[ "$bytes" -le $((100 * 1048576)) ] || fail "bundle is $bytes bytes, over 100 MiB"
for f in bin/rtrace bin/rtrace-demo bin/rtrace-demo-check lib/librtrace_tracer.so tests/gpu/validate.sh tests/gpu/first-run.sh tests/gpu/gpu_spec.sh \
         share/rtrace/examples/run-2points-traced.h5 BUNDLE.txt; do
  [ -e "$bundle/$f" ] || fail "the bundle lacks $f"
done
for f in "$bundle"/lib/*; do
  case "${f##*/}" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*)
      fail "the bundle holds ${f##*/}, which must come from the node" ;;
  esac
done
# CUPTI: NVIDIA's files, exactly as the toolkit ships them (the EULA allows no changes).
cupti=(libcupti.so.13 libnvperf_host.so libnvperf_target.so)
if grep -q '^RTRACE_ENABLE_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  toolkit_lib=$(sed -n 's/^CUDAToolkit_LIBRARY_DIR:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  for f in "${cupti[@]}"; do
    [ -f "$bundle/lib/$f" ] || fail "a CUDA bundle lacks lib/$f"
    if [ -f "$toolkit_lib/$f" ]; then
      cmp -s "$toolkit_lib/$f" "$bundle/lib/$f" || fail "lib/$f differs from $toolkit_lib/$f (it must be NVIDIA's file, unmodified)"
    fi
  done
  [ -s "$bundle/share/rtrace/licenses/NVIDIA-CUDA-EULA.txt" ] || fail "the bundle ships CUPTI without the CUDA EULA"
  grep -q "Attachment A" "$bundle/share/rtrace/licenses/NVIDIA-CUDA-EULA.txt" || fail "the EULA in the bundle has no Attachment A"
  echo "ok: CUPTI in the bundle (${cupti[*]}), unmodified, with the CUDA EULA"
fi

# ---- the root: the bundle in /opt/rtrace, glibc from this machine, nothing else
root="$WORK/root"
mkdir -p "$root"/{opt,tmp,dev,proc,sys,lib64} "$root/etc"
chmod 1777 "$root/tmp"
cp -a "$bundle" "$root/opt/rtrace"
libc=$(ldd "$bundle/bin/rtrace" | awk '$1 == "libc.so.6" {print $3}')
[ -n "$libc" ] || fail "cannot find this machine's libc.so.6"
glibc_dir=$(dirname "$libc")
mkdir -p "$root$glibc_dir"
for lib in libc.so.6 libm.so.6 libmvec.so.1 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libutil.so.1 \
           libanl.so.1 libnss_files.so.2 libnss_dns.so.2; do
  [ -e "$glibc_dir/$lib" ] && cp -L "$glibc_dir/$lib" "$root$glibc_dir/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
echo "root:x:0:0:root:/tmp:/nonexistent" >"$root/etc/passwd"
# Bundle copy without its lib/: must NOT start in the root.
mkdir -p "$root/opt/orphan/bin"
cp "$bundle/bin/rtrace" "$root/opt/orphan/bin/"
for dev in null zero urandom; do touch "$root/dev/$dev"; done

# Runs a command inside the root (private mount namespace: /proc, /dev binds).
TIMEOUT_BIN=$(command -v timeout) CHROOT_BIN=$(command -v chroot)
in_root() {
  unshare -m --propagation private sh -c '
    r=$0 t=$1 c=$2
    shift 2
    mount -t proc proc "$r/proc" || exit 90
    mount --rbind /sys "$r/sys" || exit 90
    for d in null zero urandom; do mount --bind "/dev/$d" "$r/dev/$d" || exit 90; done
    exec env -i PATH=/opt/rtrace/bin HOME=/tmp TMPDIR=/tmp LANG=C "$t" 300 "$c" "$r" "$@"
  ' "$root" "$TIMEOUT_BIN" "$CHROOT_BIN" "$@"
}

# A container without mount rights cannot build the root: skip, saying so.
if ! probe=$(unshare -m --propagation private sh -c 'mount -t proc proc "$0/proc"' "$root" 2>&1); then
  echo "skipped: cannot mount /proc in a private mount namespace here ($probe)"
  exit 77
fi

# ---- 1. every ELF resolves inside the root
for f in "$root"/opt/rtrace/bin/* "$root"/opt/rtrace/lib/*; do
  rel=${f#"$root"}
  # CUPTI carries no RUNPATH (unmodified): it is loaded into a process that has lib/ loaded already.
  libpath=()
  case "${f##*/}" in libcupti.so*|libnvperf*) libpath=(--library-path /opt/rtrace/lib) ;; esac
  out=$(in_root /lib64/ld-linux-x86-64.so.2 "${libpath[@]}" --list "$rel" 2>&1) || fail "ld.so --list $rel: $out"
  if printf '%s\n' "$out" | grep -q "not found"; then fail "$rel in the root: $(printf '%s\n' "$out" | grep 'not found' | head -3)"; fi
  outside=$(printf '%s\n' "$out" | awk '$2 == "=>" && $3 !~ "^/opt/rtrace/" && $3 !~ "^'"$glibc_dir"'/" {print $1" => "$3}')
  [ -z "$outside" ] || fail "$rel loads from outside the bundle: $outside"
done
echo "ok: all $(ls "$bundle/bin" "$bundle/lib" | wc -l) ELF files resolve inside the root"
out=$(in_root /opt/orphan/bin/rtrace --help 2>&1); rc=$?
[ "$rc" -eq 127 ] || fail "rtrace without the bundle's lib/ exited $rc in the root (expected 127: the root must lack HDF5 etc.): $out"
echo "ok: rtrace without lib/ does not start in the root (exit 127), so the root holds no host libraries"

# ---- 2. rtrace's own commands
out=$(in_root /opt/rtrace/bin/rtrace --help 2>&1) || fail "rtrace --help: $out"
printf '%s\n' "$out" | grep -qi "usage" || fail "rtrace --help printed no usage: $out"
in_root /opt/rtrace/bin/rtrace --version || fail "rtrace --version"
example=/opt/rtrace/share/rtrace/examples/run-2points-traced.h5
out=$(in_root /opt/rtrace/bin/rtrace validate "$example" 2>&1) || fail "rtrace validate $example: $out"
echo "ok: rtrace validate: $out" | head -2
out=$(in_root /opt/rtrace/bin/rtrace analyze "$example" --html /tmp/example.html 2>&1) || fail "rtrace analyze --html: $out"
[ -s "$root/tmp/example.html" ] && grep -qi "<html" "$root/tmp/example.html" || fail "rtrace analyze wrote no HTML report"
echo "ok: rtrace analyze --html ($(stat -c %s "$root/tmp/example.html") bytes)"

# ---- 3. a sweep of the demo under the bundled tracer
out=$(in_root /opt/rtrace/bin/rtrace --sweep threads=1 --ert none -o /tmp/run.h5 -- \
      /opt/rtrace/bin/rtrace-demo triad --size 200000 --iters 3 2>&1)
rc=$?
printf '%s\n' "$out" | tail -5
[ "$rc" -eq 0 ] || fail "rtrace --sweep threads=1 -- rtrace-demo triad exited $rc in the root"
out=$(in_root /opt/rtrace/bin/rtrace validate /tmp/run.h5 2>&1) || fail "rtrace validate of the sweep's file: $out"
# The demo's result check, from the run file, by the bundled rtrace-demo-check.
out=$(in_root /opt/rtrace/bin/rtrace-demo-check points /tmp/run.h5 2>&1) || fail "rtrace-demo-check points: $out"
printf '%s\n' "$out"
printf '%s\n' "$out" | awk -F'\t' '$1 == "0" && $3 == "ok" && $10 == "ok" {found = 1} END {exit !found}' ||
  fail "point 0 of the sweep is not ok with check=ok"
# The tracer wrote the demo's region (h5dump from this machine, outside the root).
if command -v h5dump >/dev/null; then
  names=$(h5dump -d /points/p000000/ranks/r000000/names "$root/tmp/run.h5" 2>&1)
  case "$names" in *'"triad"'*) echo "ok: the bundled tracer recorded the triad region" ;;
    *) fail "the sweep's run file has no triad region name: the tracer did not run: $names" ;; esac
fi

# ---- 4. rtrace ert --list-gpus without a driver: one line, non-zero exit
out=$(in_root /opt/rtrace/bin/rtrace ert --list-gpus 2>&1); rc=$?
if [ "$rc" -eq 0 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "no GPU found"; then
  fail "rtrace ert --list-gpus in the root (no libcuda) exited $rc: $out (expected one 'no GPU found' line, non-zero)"
fi
echo "ok: rtrace ert --list-gpus: $out (exit $rc)"

# ---- 5. the CUDA demo starts without a GPU (and without libcuda) and says so
if [ -x "$bundle/bin/rtrace-demo-cuda" ]; then
  out=$(in_root /opt/rtrace/bin/rtrace-demo-cuda triad --size 1024 2>&1); rc=$?
  [ "$rc" -eq 2 ] && printf '%s\n' "$out" | grep -q "no GPU found" ||
    fail "rtrace-demo-cuda in the root exited $rc, expected 2 with 'no GPU found': $out"
  echo "ok: rtrace-demo-cuda: $out"
fi
# ---- 6. the bundled tracer finds the bundled CUPTI inside the root
fake_cuda_lib="$BUILD/tests/gpu/fake_cuda/lib/libcuda.so.1"
fake_app="$BUILD/bin/rtrace-fake-cuda-app"
if [ -f "$bundle/lib/libcupti.so.13" ] && [ -f "$fake_cuda_lib" ] && [ -x "$fake_app" ]; then
  mkdir -p "$root/opt/fake"
  cp -L "$fake_cuda_lib" "$root/opt/fake/libcuda.so.1"
  cp "$fake_app" "$root/opt/fake/"
  out=$(in_root /opt/rtrace/bin/rtrace --sweep threads=1 --ert none --tracer cuda -o /tmp/cuda.h5 \
        --env LD_LIBRARY_PATH=/opt/fake:/opt/rtrace/lib -- /opt/fake/rtrace-fake-cuda-app --iters 1 --size 4096 2>&1)
  rc=$?
  printf '%s\n' "$out" | tail -3
  [ "$rc" -eq 1 ] || fail "rtrace --tracer cuda of the fake CUDA app in the root exited $rc (expected 1: the point fails)"
  if command -v h5dump >/dev/null; then
    log=$(h5dump -a /points/p000000/log "$root"/tmp/cuda.h5.d/p000000*.h5 2>&1)
    case "$log" in
      *"GPU tracing failed: cuptiSubscribe (/opt/rtrace/lib/libcupti.so.13)"*)
        echo "ok: the bundled tracer loaded /opt/rtrace/lib/libcupti.so.13 in the root; the point failed with that line" ;;
      *) fail "the point's log does not name the bundled CUPTI: $log" ;;
    esac
  fi
fi
echo PASS
