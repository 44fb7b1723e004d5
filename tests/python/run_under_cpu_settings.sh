#!/usr/bin/env bash
# The PyTorch tests (pytest) as another processor would run them: ATen's vector kernels
# (ATEN_CPU_CAPABILITY), OpenBLAS's kernels (OPENBLAS_CORETYPE) and the OpenMP and BLAS thread
# count forced to what the arguments name. CI's machines are allocated afresh, Intel or AMD, with
# or without AVX-512, and their kernels give other bits; a test whose expectation is bits one
# machine computed fails on the next (issue 47, tests/README.md). Run under two settings by CTest
# (tests/CMakeLists.txt), so that such a test fails here, not on the next machine.
# Usage: run_under_cpu_settings.sh CAPABILITY CORETYPE THREADS [pytest arguments]
#   CAPABILITY: default | avx2 | avx512; CORETYPE: an OpenBLAS core (Haswell, Zen, SkylakeX, ...)
#   or "native" (OpenBLAS's own choice); THREADS: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS.
# Exits 77 (CTest: skipped), saying why, where this CPU lacks the instructions the setting needs:
# PyTorch and OpenBLAS do not check, they die of SIGILL.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 CAPABILITY CORETYPE THREADS [pytest arguments]" >&2
  exit 2
fi
capability=$1 coretype=$2 threads=$3
shift 3

flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
needs() { # SETTING FLAG...: exit 77 unless the CPU has every FLAG
  local setting=$1 flag
  shift
  for flag in "$@"; do
    if [[ $flags != *" $flag "* ]]; then
      echo "skipped: $setting needs the CPU flag $flag, which this CPU lacks" >&2
      exit 77
    fi
  done
}
case $capability in
  default) ;;
  avx2) needs ATEN_CPU_CAPABILITY=avx2 avx2 fma ;;
  avx512) needs ATEN_CPU_CAPABILITY=avx512 avx512f avx512bw avx512vl avx512dq ;;
  *) echo "unknown ATEN_CPU_CAPABILITY $capability: expected default, avx2 or avx512" >&2; exit 2 ;;
esac
case $coretype in
  native) ;;
  Haswell | Zen) needs "OPENBLAS_CORETYPE=$coretype" avx2 fma ;;
  SkylakeX | Cooperlake | SapphireRapids)
    needs "OPENBLAS_CORETYPE=$coretype" avx512f avx512bw avx512vl ;;
esac

export ATEN_CPU_CAPABILITY=$capability OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
if [ "$coretype" = native ]; then
  unset OPENBLAS_CORETYPE  # empty, OpenBLAS would say "Core not found" before choosing its own
else
  export OPENBLAS_CORETYPE=$coretype
fi
echo "ATEN_CPU_CAPABILITY=$capability OPENBLAS_CORETYPE=$coretype threads=$threads" >&2
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@"
