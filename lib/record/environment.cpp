#include "record/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "train/backend_choice.h"

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

namespace ra::record {
namespace {

// Flags that change which kernels run or how their arithmetic rounds; the 100-odd others
// (e.g. "tsc", "pse") would only make fingerprints of equivalent machines differ.
constexpr std::array<std::string_view, 12> kRelevantFlags = {
    "sse4_2",   "avx",         "avx2",     "fma",   "avx512f", "avx512bw",
    "avx512vl", "avx512_bf16", "amx_tile", "asimd", "sve",     "sve2"};

#if defined(REPRO_AUDIT_BUILD_TYPE)
constexpr const char* kBuildType = REPRO_AUDIT_BUILD_TYPE;
#else
constexpr const char* kBuildType = "unknown";
#endif
#if defined(REPRO_AUDIT_CXX_FLAGS)
constexpr const char* kCxxFlags = REPRO_AUDIT_CXX_FLAGS;
#else
constexpr const char* kCxxFlags = "unknown";
#endif
#if defined(REPRO_AUDIT_VERSION)
constexpr const char* kToolVersion = REPRO_AUDIT_VERSION;
#else
constexpr const char* kToolVersion = "unknown";
#endif

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("g++ ") + __VERSION__;
#else
  return "unknown";
#endif
}

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}

std::string os_description() {
  utsname u{};
  if (::uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string glibc_version() {
#if defined(__GLIBC__)
  return gnu_get_libc_version();
#else
  return "unknown";
#endif
}

std::string hostname() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "unknown";
  return name.data();
}

}  // namespace

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  bool have_model = false, have_flags = false;
  std::size_t pos = 0;
  while (pos < text.size() && !(have_model && have_flags)) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && !have_model) {
      info.model = value.empty() ? "unknown" : value;
      have_model = true;
    } else if ((key == "flags" || key == "Features") && !have_flags) {
      std::set<std::string, std::less<>> present;
      std::size_t p = 0;
      while (p < value.size()) {
        std::size_t q = value.find(' ', p);
        if (q == std::string::npos) q = value.size();
        if (q > p) present.insert(value.substr(p, q - p));
        p = q + 1;
      }
      for (std::string_view flag : kRelevantFlags) {
        if (present.count(flag)) info.flags.emplace_back(flag);
      }
      have_flags = true;
    }
  }
  return info;
}

nlohmann::json environment_fingerprint(int threads, const std::string& backend) {
  CpuInfo cpu;
  try {
    cpu = parse_cpuinfo(read_file("/proc/cpuinfo"));
  } catch (const InputError&) {
    // No /proc (a restricted container): the model stays "unknown" rather than failing a run.
  }
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  nlohmann::json doc = {{"cpu_model", cpu.model},
                        {"cpu_flags", cpu.flags},
                        {"logical_cpus", cpus > 0 ? cpus : 0},
                        {"threads", threads},
                        {"backend", backend},
                        {"compiler", compiler()},
                        {"build_type", kBuildType},
                        {"cxx_flags", trim(kCxxFlags)},
                        {"os", os_description()},
                        {"glibc", glibc_version()},
                        {"tool_version", kToolVersion},
                        {"hostname", hostname()}};
  // The CPU backend's kernel choice ("cpu_gemm_kernel": FMA kernels give other bits than the
  // portable one): the likely explanation when CPU traces of two machines differ.
  doc.update(train::cpu_fingerprint());
  return doc;
}

}  // namespace ra::record
