#!/bin/sh
# usage: check_simd.sh OBJDUMP OBJECT...
# The ERT kernels must be vectorised with the widest registers of the ISA they
# were built for (zmm with AVX-512, ymm with AVX2) and the fma variant must use
# FMA instructions that the nofma variant never uses.
set -eu
objdump=$1
shift
fma_obj= nofma_obj=
# CMake passes $<TARGET_OBJECTS:...> as one ;-separated argument.
for o in $(printf '%s\n' "$@" | tr ';' '\n'); do
  case $o in
    *cpu_kernels_fma*) fma_obj=$o ;;
    *cpu_kernels_nofma*) nofma_obj=$o ;;
  esac
done
[ -n "$fma_obj" ] && [ -n "$nofma_obj" ] || { echo "kernel objects not found in: $*"; exit 1; }

dis() { "$objdump" -d --no-show-raw-insn "$1"; }
host_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
case " $host_flags " in
  *" avx512f "*) host_reg=zmm ;;
  *" avx2 "*) host_reg=ymm ;;
  *) host_reg=xmm ;;
esac
if dis "$fma_obj" | grep -q '%zmm'; then reg=zmm
elif dis "$fma_obj" | grep -q '%ymm'; then reg=ymm
else reg=xmm; fi
echo "kernels use $reg registers; this host's widest is $host_reg"

if [ "${RTRACE_EXPECT_NATIVE:-0}" = 1 ] && [ "$reg" != "$host_reg" ]; then
  echo "FAIL: built with RTRACE_NATIVE but the kernels use $reg, not the host's $host_reg"
  exit 1
fi
fma_pd=$(dis "$fma_obj" | grep -cE "vfmadd[0-9]+pd .*%$reg" || true)
fma_ps=$(dis "$fma_obj" | grep -cE "vfmadd[0-9]+ps .*%$reg" || true)
nofma_fma=$(dis "$nofma_obj" | grep -cE 'vfmadd|vfmsub|vfnmadd' || true)
nofma_mul=$(dis "$nofma_obj" | grep -cE "vmulpd .*%$reg" || true)
echo "fma object: $fma_pd packed-double and $fma_ps packed-single FMAs on $reg"
echo "nofma object: $nofma_mul packed-double multiplies on $reg, $nofma_fma FMAs"
case " $host_flags " in *" fma "*|*" avx512f "*) has_fma=1 ;; *) has_fma=0 ;; esac
if [ "$reg" = xmm ] && [ "${RTRACE_EXPECT_NATIVE:-0}" != 1 ]; then
  echo "baseline ISA build: nothing more to check"; exit 77
fi
[ "$nofma_fma" -eq 0 ] || { echo "FAIL: the nofma kernels contain FMA instructions"; exit 1; }
[ "$nofma_mul" -gt 0 ] || { echo "FAIL: the nofma kernels are not vectorised on $reg"; exit 1; }
if [ "$has_fma" = 1 ]; then
  [ "$fma_pd" -gt 0 ] && [ "$fma_ps" -gt 0 ] || { echo "FAIL: the fma kernels do not use vector FMA on $reg"; exit 1; }
fi
# The bandwidth kernel (FP64, F = 1) must be unrolled: one vector per loop
# step ran 680-1000 GB/s in L1 on the Zen 5 VM of issue 32, lowest at 10-16
# KiB per worker, where unrolled 8x it runs 1020-1090 at every size (LIKWID's
# update_avx512: 930-1070).
bw_adds=$("$objdump" -d -C --no-show-raw-insn "$fma_obj" |
  awk '/ert_kernel_erased<double, 1>\(.*>:$/ {on = 1; next} on && /^$/ {on = 0} on' |
  grep -cE "vaddpd .*%$reg" || true)
echo "bandwidth kernel (FP64, F = 1): $bw_adds packed-double adds on $reg"
[ "$bw_adds" -ge 4 ] || { echo "FAIL: the bandwidth kernel's loop moves one vector per step (not unrolled)"; exit 1; }
echo PASS
