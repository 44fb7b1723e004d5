// Environment fingerprint: every key present with the value the machine reports, the /proc/cpuinfo
// parser on fixed text (the differences between two fingerprints: tests/compare).
#include "record/environment.h"
#include "backend/cpu/simd/isa.h"

#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using nlohmann::json;
using Strings = std::vector<std::string>;

TEST_CASE("environment_fingerprint has every key, with this machine's values", "[environment]") {
  const json env = ra::record::environment_fingerprint(3, "cpu");
  for (const char* key :
       {"cpu_model", "cpu_flags", "logical_cpus", "threads", "backend", "compiler", "build_type",
        "cxx_flags", "os", "glibc", "tool_version", "hostname", "cpu_gemm_kernel"}) {
    INFO(key);
    CHECK(env.contains(key));
  }
  CHECK(env.size() == 13);
  CHECK(env["threads"] == 3);
  CHECK(env["backend"] == "cpu");
  CHECK(env["logical_cpus"] == ::sysconf(_SC_NPROCESSORS_ONLN));
  CHECK(env["glibc"] == std::string(gnu_get_libc_version()));
  utsname u{};
  REQUIRE(::uname(&u) == 0);
  CHECK(env["os"] == std::string(u.sysname) + " " + u.release + " " + u.machine);
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  CHECK(env["hostname"] == std::string(host));
  const std::string compiler = env["compiler"];
  CHECK((compiler.rfind("g++ ", 0) == 0 || compiler.rfind("clang ", 0) == 0));
  for (const char* key : {"cpu_model", "build_type", "cxx_flags", "tool_version"}) {
    INFO(key);
    REQUIRE(env[key].is_string());
    CHECK_FALSE(env[key].get<std::string>().empty());
  }
  // cpu_flags: the relevant flags this machine reports, nothing else.
  std::ifstream proc("/proc/cpuinfo");
  std::stringstream cpuinfo;
  cpuinfo << proc.rdbuf();
  const auto cpu = ra::record::parse_cpuinfo(cpuinfo.str());
  CHECK(env["cpu_flags"] == json(cpu.flags));
  CHECK(env["cpu_model"] == cpu.model);
}

TEST_CASE("parse_cpuinfo takes the first CPU's model and its relevant flags in fixed order",
          "[environment]") {
  const std::string x86 =
      "processor\t: 0\n"
      "vendor_id\t: GenuineIntel\n"
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\n"
      "flags\t\t: fpu vme amx_tile avx512vl fma sse4_2 avx512f tsc avx2 avx avx512_bf16 avx512bw\n"
      "\n"
      "processor\t: 1\n"
      "model name\t: Some Other CPU\n"
      "flags\t\t: fpu\n";
  const auto info = ra::record::parse_cpuinfo(x86);
  CHECK(info.model == "Intel(R) Xeon(R) Platinum 8480+");
  CHECK(info.flags == Strings{"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                              "avx512_bf16", "amx_tile"});

  // "avx512" alone or "avx2x" must not be mistaken for the real flags.
  CHECK(ra::record::parse_cpuinfo("flags : avx512 avx2x sse4_2\n").flags == Strings{"sse4_2"});

  const auto arm =
      ra::record::parse_cpuinfo("processor : 0\nFeatures : fp asimd evtstrm sve2 sve\n");
  CHECK(arm.model == "unknown");  // aarch64 kernels print no "model name"
  CHECK(arm.flags == Strings{"asimd", "sve", "sve2"});

  const auto none = ra::record::parse_cpuinfo("");
  CHECK(none.model == "unknown");
  CHECK(none.flags.empty());
}

TEST_CASE("the fingerprint names the GEMM kernel the CPU backend runs", "[environment]") {
  const auto env = ra::record::environment_fingerprint(1, "cpu");
  CHECK(env["cpu_gemm_kernel"] == std::string(ra::backend::cpu::active_isa_name()));
}
