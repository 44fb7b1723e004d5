// One test per class of bad input: exit code 2 (3 for an unusable device) and a message that
// names the JSON path or the file.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/cli_runner.h"

using ra::test::run_cli;
using ra::test::TempDir;

namespace {

// A small valid spec on random data; tests break one thing in it.
nlohmann::json valid_spec() {
  return nlohmann::json::parse(R"({
    "name": "t", "seed": 1, "threads": 1,
    "data": {"train": {"format": "random", "samples": 64, "shape": [1, 8, 8], "classes": 4},
             "batch_size": 16},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 4}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 1}})");
}

ra::test::CliResult train_with(const TempDir& dir, const nlohmann::json& spec) {
  const auto path = dir.write("spec.json", spec.dump());
  return run_cli("train '" + path.string() + "'");
}

void require_bad_input(const ra::test::CliResult& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find(needle) != std::string::npos);
  REQUIRE(r.out.empty());
}

}  // namespace

TEST_CASE("the valid base spec trains", "[cli]") {
  TempDir dir;
  REQUIRE(train_with(dir, valid_spec()).exit_code == 0);
}

TEST_CASE("missing spec file", "[cli]") {
  require_bad_input(run_cli("train /nonexistent/spec.json"), "/nonexistent/spec.json");
}

TEST_CASE("malformed JSON names the file and the line", "[cli]") {
  TempDir dir;
  const auto path = dir.write("broken.json", "{\n  \"name\": \"x\",\n  \"seed\": ,\n}\n");
  const auto r = run_cli("train '" + path.string() + "'");
  require_bad_input(r, "broken.json:3:11: invalid JSON");
}

TEST_CASE("unknown key names its path", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["model"]["layers"][0]["filter"] = 3;
  require_bad_input(train_with(dir, spec), "model.layers[0].filter");
}

TEST_CASE("wrong type names its path", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["data"]["batch_size"] = "sixteen";
  require_bad_input(train_with(dir, spec), "data.batch_size");
}

TEST_CASE("out-of-range value names its path", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["optimizer"]["lr"] = -1;
  require_bad_input(train_with(dir, spec), "optimizer.lr");
}

TEST_CASE("all problems are reported at once", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["optimizer"]["lr"] = -1;
  spec["data"]["batch_size"] = 0;
  const auto r = train_with(dir, spec);
  require_bad_input(r, "optimizer.lr");
  REQUIRE(r.err.find("data.batch_size") != std::string::npos);
}

TEST_CASE("kernel larger than its input is an impossible shape", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["model"]["layers"][0]["kernel"] = 9;
  require_bad_input(train_with(dir, spec), "model.layers[0]");
}

TEST_CASE("dense after an unflattened conv is an impossible shape", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["model"]["layers"].erase(1);
  require_bad_input(train_with(dir, spec), "model.layers[1]");
}

TEST_CASE("missing data file names the file", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["data"]["train"] = {{"format", "idx"},
                           {"images", (dir.path() / "no-images.gz").string()},
                           {"labels", (dir.path() / "no-labels.gz").string()}};
  require_bad_input(train_with(dir, spec), "no-images.gz");
  // An audit fails the same way and leaves no empty output folder behind.
  const auto path = dir.write("audit-spec.json", spec.dump());
  require_bad_input(
      run_cli("run '" + path.string() + "' --runs 2 --out '" + (dir.path() / "out").string() + "'"),
      "no-images.gz");
  REQUIRE_FALSE(std::filesystem::exists(dir.path() / "out"));
}

TEST_CASE("corrupt and truncated IDX files name the file", "[cli]") {
  TempDir dir;
  // Labels file: valid header for 64 labels.
  std::string labels("\x00\x00\x08\x01\x00\x00\x00\x40", 8);
  labels += std::string(64, '\x01');
  dir.write("labels.idx", labels);
  auto spec = valid_spec();
  spec["data"]["train"] = {{"format", "idx"},
                           {"images", (dir.path() / "images.idx").string()},
                           {"labels", (dir.path() / "labels.idx").string()}};
  SECTION("bad magic") {
    dir.write("images.idx", std::string("\x12\x34\x08\x03", 4) + std::string(100, '\0'));
    require_bad_input(train_with(dir, spec), "images.idx");
  }
  SECTION("truncated data") {
    std::string images("\x00\x00\x08\x03\x00\x00\x00\x40\x00\x00\x00\x08\x00\x00\x00\x08", 16);
    images += std::string(64 * 64 - 10, '\x05');
    dir.write("images.idx", images);
    require_bad_input(train_with(dir, spec), "images.idx");
  }
}

TEST_CASE("data shape that does not match the model input", "[cli]") {
  TempDir dir;
  std::string labels("\x00\x00\x08\x01\x00\x00\x00\x40", 8);
  labels += std::string(64, '\x01');
  std::string images("\x00\x00\x08\x03\x00\x00\x00\x40\x00\x00\x00\x07\x00\x00\x00\x07", 16);
  images += std::string(64 * 49, '\x05');
  dir.write("labels.idx", labels);
  dir.write("images.idx", images);
  auto spec = valid_spec();
  spec["data"]["train"] = {{"format", "idx"},
                           {"images", (dir.path() / "images.idx").string()},
                           {"labels", (dir.path() / "labels.idx").string()}};
  require_bad_input(train_with(dir, spec), "model.input");
}

TEST_CASE("usage errors exit 2", "[cli]") {
  REQUIRE(run_cli("train").exit_code == 2);
  REQUIRE(run_cli("frobnicate").exit_code == 2);
  REQUIRE(run_cli("train x.json --threads -3").exit_code == 2);
  REQUIRE(run_cli("train x.json --mode sometimes").exit_code == 2);
  REQUIRE(run_cli("--help").exit_code == 0);
}

TEST_CASE("validate --json reports problems as data", "[cli]") {
  TempDir dir;
  auto spec = valid_spec();
  spec["train"]["epochs"] = 0;
  const auto path = dir.write("spec.json", spec.dump());
  const auto r = run_cli("validate --json '" + path.string() + "'");
  REQUIRE(r.exit_code == 2);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.at("valid") == false);
  REQUIRE(doc.at("problems")[0].at("path") == "train.epochs");
}

TEST_CASE("asking for CUDA without a usable GPU is a runtime failure, exit 3", "[cli]") {
  // (This machine kind has no GPU; on one that has, the spec would train there.)
  TempDir dir;
  auto spec = valid_spec();
  spec["device"] = "cuda";
  const auto r = train_with(dir, spec);
  INFO(r.err);
  REQUIRE(r.exit_code == 3);
  REQUIRE(r.err.find("cuda") != std::string::npos);
}

TEST_CASE("the device option overrides the spec: cuda without a GPU exits 3, cpu trains", "[cli]") {
  TempDir dir;
  const auto path = dir.write("spec.json", valid_spec().dump());
  if (run_cli("env --json").out.find("\"available\": false") == std::string::npos) {
    WARN("skipped: this machine has a usable GPU");
    return;
  }
  const auto train = run_cli("train '" + path.string() + "' --device cuda");
  REQUIRE(train.exit_code == 3);
  REQUIRE(train.err.find("no GPU is usable") != std::string::npos);
  const auto audit = run_cli("run '" + path.string() + "' --device cuda --runs 2 --out '" +
                             (dir.path() / "out").string() + "'");
  REQUIRE(audit.exit_code == 3);
  REQUIRE_FALSE(std::filesystem::exists(dir.path() / "out"));  // nothing left behind
  REQUIRE(run_cli("train '" + path.string() + "' --device cpu").exit_code == 0);
  REQUIRE(run_cli("train '" + path.string() + "' --device tpu").exit_code == 2);
}

TEST_CASE("env prints the fingerprint a trace records, GPU availability included", "[cli]") {
  const auto r = run_cli("env --json");
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  for (const char* key : {"cpu_model", "cpu_flags", "compiler", "cxx_flags", "os", "gpu"}) {
    INFO(key);
    REQUIRE(doc.contains(key));
  }
  // Either a usable GPU described, or the reason there is none.
  const auto& gpu = doc.at("gpu");
  REQUIRE((gpu.contains("gpu") ||
           (gpu.at("available") == false && !gpu.at("reason").get<std::string>().empty())));
}

namespace {
// Sets an environment variable for the child processes of one test, and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};
}  // namespace

TEST_CASE("REPRO_AUDIT_ISA forces the CPU instruction set, which the fingerprint records",
          "[cli]") {
  const ScopedEnv no_alias("REPRO_AUDIT_GEMM", "");  // empty: unset
  {
    const ScopedEnv forced("REPRO_AUDIT_ISA", "portable");
    const auto r = run_cli("env --json");
    REQUIRE(r.exit_code == 0);
    REQUIRE(nlohmann::json::parse(r.out).at("cpu_gemm_kernel") == "portable");
  }
  const ScopedEnv bogus("REPRO_AUDIT_ISA", "bogus");
  const auto r = run_cli("env --json");
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("REPRO_AUDIT_ISA=bogus") != std::string::npos);
}

TEST_CASE(
    "REPRO_AUDIT_GEMM still forces the instruction set, and may not contradict "
    "REPRO_AUDIT_ISA",
    "[cli]") {
  {
    const ScopedEnv no_isa("REPRO_AUDIT_ISA", "");  // empty: unset
    const ScopedEnv forced("REPRO_AUDIT_GEMM", "portable");
    const auto r = run_cli("env --json");
    REQUIRE(r.exit_code == 0);
    REQUIRE(nlohmann::json::parse(r.out).at("cpu_gemm_kernel") == "portable");
  }
  {
    const ScopedEnv no_isa("REPRO_AUDIT_ISA", "");
    const ScopedEnv bogus("REPRO_AUDIT_GEMM", "bogus");
    const auto r = run_cli("env --json");
    REQUIRE(r.exit_code == 2);
    REQUIRE(r.out.empty());
    REQUIRE(r.err.find("REPRO_AUDIT_GEMM=bogus") != std::string::npos);
  }
  const ScopedEnv isa("REPRO_AUDIT_ISA", "portable");
  const ScopedEnv gemm("REPRO_AUDIT_GEMM", "avx2");
  const auto r = run_cli("env --json");
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("REPRO_AUDIT_ISA=portable") != std::string::npos);
  REQUIRE(r.err.find("REPRO_AUDIT_GEMM=avx2") != std::string::npos);
}
