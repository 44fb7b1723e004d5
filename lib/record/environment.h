#pragma once
// The environment fingerprint recorded in every trace header: what could explain differences
// between runs made on different machines or builds (CPU model and vector extensions decide which
// kernels and which FMA contractions run; compiler and flags decide the instruction sequence;
// glibc decides libm's exp/log; thread count and backend decide the reduction order of the
// nondeterministic ops). `compare` reports the keys that differ between traces
// (compare/fingerprint_differences.h).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ra::record {

// Keys (all always present; "unknown" where the machine does not say):
//   "cpu_model"    /proc/cpuinfo "model name" of the first CPU
//   "cpu_flags"    array, the relevant flags present, in this order: sse4_2 avx avx2 fma avx512f
//                  avx512bw avx512vl avx512_bf16 amx_tile (x86) and asimd sve sve2 (aarch64)
//   "logical_cpus" online logical CPUs; "threads" and "backend" as given
//   "compiler"     e.g. "g++ 12.2.0" or "clang 14.0.6"
//   "build_type", "cxx_flags", "tool_version"  from the compile definitions
//                  REPRO_AUDIT_BUILD_TYPE, REPRO_AUDIT_CXX_FLAGS, REPRO_AUDIT_VERSION
//   "os"           uname: "<sysname> <release> <machine>"; "glibc" gnu_get_libc_version()
//   "hostname"
nlohmann::json environment_fingerprint(int threads, const std::string& backend);

// What the fingerprint takes from /proc/cpuinfo; exposed so it can be tested on fixed text.
struct CpuInfo {
  std::string model = "unknown";  // first "model name" line
  std::vector<std::string>
      flags;  // relevant flags of the first "flags"/"Features" line, in the order above
};
CpuInfo parse_cpuinfo(std::string_view cpuinfo_text);

}  // namespace ra::record
