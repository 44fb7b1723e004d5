// The binary starts without CUDA's libraries: it links none of them (the CUDA backend is a plugin
// it loads when a run asks for a GPU: backend/cuda_plugin_api.h), and a plugin that cannot be
// loaded is named, with the loader's reason, where a run needs it.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "cli/cli_runner.h"

using Catch::Matchers::Contains;
using ra::test::run_cli;

namespace {

// The DT_NEEDED entries of an ELF file, as `readelf -d` prints them (binutils: on every machine
// with the compiler that built it).
std::string needed_libraries(const std::string& path) {
  ra::test::TempDir tmp;
  const auto out = tmp.path() / "dynamic";
  const std::string command = "readelf -d '" + path + "' >'" + out.string() + "' 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  std::string needed;
  std::istringstream lines(ra::test::read_text(out));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(NEEDED)") != std::string::npos) needed += line + "\n";
  }
  return needed;
}

}  // namespace

TEST_CASE("repro-audit links no CUDA library: it starts where CUDA is not installed", "[cli]") {
  const std::string needed = needed_libraries(REPRO_AUDIT_BINARY);
  INFO(needed);
  CHECK_FALSE(needed.empty());  // (readelf read it: libc at least)
  for (const char* cuda_library : {"libcudart", "libcublas", "libcudnn", "libcuda."}) {
    CHECK(needed.find(cuda_library) == std::string::npos);
  }
}

TEST_CASE("a CUDA plugin that cannot be loaded is named where a run needs the GPU", "[cli]") {
  ra::test::TempDir tmp;
  const std::string missing = (tmp.path() / "nowhere" / "librepro-audit-cuda.so").string();
  const std::string quick = ra::test::quoted(ra::test::source_path("configs/quick.json"));
  // (CTest runs each case in its own process: the variable reaches only this case's commands.)
  REQUIRE(::setenv("REPRO_AUDIT_CUDA_PLUGIN", missing.c_str(), 1) == 0);
  const auto named = run_cli("train " + quick + " --device cuda");
  CHECK(named.exit_code == 3);
  CHECK_THAT(named.err, Contains("no GPU is usable"));
#ifdef RA_HAVE_CUDA
  CHECK_THAT(named.err, Contains("the CUDA backend (" + missing + ") could not be loaded"));
  CHECK_THAT(named.err, Contains("No such file"));
#else
  CHECK_THAT(named.err, Contains("this build has no CUDA backend"));
#endif
  // A CPU run never loads it.
  const auto cpu = run_cli("validate " + quick);
  ::unsetenv("REPRO_AUDIT_CUDA_PLUGIN");
  CHECK(cpu.exit_code == 0);
}
