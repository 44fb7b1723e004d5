// fingerprint_differences (compare/fingerprint_differences.h): the keys in which two environment
// fingerprints differ, on a fingerprint of the kind record/environment.h writes.
#include "compare/fingerprint_differences.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using nlohmann::json;
using Strings = std::vector<std::string>;

namespace {

// The 13 keys of environment_fingerprint(2, "cpu") (tests/record/environment_test.cpp), with the
// values of one machine.
json fingerprint_of_this_kind() {
  return {{"backend", "cpu"},
          {"build_type", "Release"},
          {"compiler", "g++ 12.2.0"},
          {"cpu_flags", json::array({"sse4_2", "avx", "avx2", "fma"})},
          {"cpu_gemm_kernel", "avx2-fma"},
          {"cpu_model", "AMD EPYC"},
          {"cxx_flags", "-O3 -DNDEBUG -ffp-contract=off"},
          {"glibc", "2.36"},
          {"hostname", "vm"},
          {"logical_cpus", 2},
          {"os", "Linux 6.1.0 x86_64"},
          {"threads", 2},
          {"tool_version", "0.1.0"}};
}

}  // namespace

TEST_CASE("fingerprint_differences lists the keys that differ", "[environment]") {
  const json a = fingerprint_of_this_kind();
  CHECK(ra::compare::fingerprint_differences(a, a).empty());

  json b = a;
  b["threads"] = 8;
  b["cpu_flags"] = json::array({"avx2"});
  CHECK(ra::compare::fingerprint_differences(a, b) == Strings{"cpu_flags", "threads"});

  json c = a;
  c.erase("hostname");  // present in one only
  c["gpu"] = "H100";
  CHECK(ra::compare::fingerprint_differences(a, c) == Strings{"gpu", "hostname"});
  CHECK(ra::compare::fingerprint_differences(c, a) == Strings{"gpu", "hostname"});

  // A trace without a fingerprint (null) differs in every key of the other.
  CHECK(ra::compare::fingerprint_differences(json(), json{{"os", "Linux"}, {"glibc", "2.36"}}) ==
        Strings{"glibc", "os"});
}
