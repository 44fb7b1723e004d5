// check_memory: the plan with the data sets' real sizes against the spec cap (exit 2) and the
// machine's memory (exit 3).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "spec/parse.h"
#include "train/memory_check.h"

using Catch::Matchers::Contains;

namespace {

ra::spec::ExperimentSpec spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({"device": "cpu",
    "data": {"train": {"format": "random", "samples": 64, "shape": [1, 28, 28], "classes": 10}},
    "model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "dense", "units": 10}]}})"),
                              ".");
}

}  // namespace

TEST_CASE("check_memory refuses what this machine cannot hold with a RuntimeFailure",
          "[train][memory]") {
  const ra::spec::ExperimentSpec s = spec();
  CHECK_NOTHROW(ra::train::check_memory(s, 64, 0, 0));  // 0: the machine's memory is unknown
  CHECK_NOTHROW(ra::train::check_memory(s, 64, 0, std::uint64_t{1} << 30));
  // 60000 samples of 784 floats: 179 MiB of data, more than a 64 MiB machine.
  CHECK_THROWS_AS(ra::train::check_memory(s, 60000, 0, std::uint64_t{64} << 20),
                  ra::RuntimeFailure);
  CHECK_THROWS_WITH(ra::train::check_memory(s, 60000, 0, std::uint64_t{64} << 20),
                    Contains("this machine gives the process 64.0 MiB"));
}

TEST_CASE("check_memory refuses an idx-sized plan above the spec cap as bad input",
          "[train][memory]") {
  // An idx set's size is known only when read: 2^31 - 1 samples of 784 floats is 6 TiB.
  CHECK_THROWS_AS(ra::train::check_memory(spec(), 2147483647, 0, 0), ra::InputError);
  CHECK_THROWS_WITH(ra::train::check_memory(spec(), 2147483647, 0, 0),
                    Contains("data.train: with 2147483647 training samples") &&
                        Contains("more than the 64.0 GiB"));
}

TEST_CASE("this machine's memory is known", "[train][memory]") {
  CHECK(ra::train::available_memory_bytes() > (std::uint64_t{64} << 20));
}
