// End-to-end: sizes a spec may ask for, its name, escaping of names in every output, command-line
// numbers, --inject-fault that never fires, labels out of range and threads the system refuses.
// Each test asserts the exit code and that the message names the JSON path or option and the
// problem.
#include <catch2/catch.hpp>

#include <zlib.h>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "core/digest.h"
#include "core/tensor.h"
#include "support/text_lines.h"

using nlohmann::json;
using ra::test::run_cli;
using ra::test::TempDir;

namespace {

using ra::test::quoted;

using ra::test::contains;

// Small and valid: random [1, 6, 6] data, 3 classes, 48 samples in batches of 16: 3 steps.
json small_spec() {
  return json::parse(R"({
    "name": "limits", "seed": 2, "threads": 1,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 1}})");
}

std::string write_limits_spec(const TempDir& dir, const json& spec,
                              const std::string& file = "spec.json") {
  return quoted(dir.write(file, spec.dump()));
}

// The forged line a hostile name tries to print, and the escape that would erase the real one.
const std::string kForgedName = "x\n  verdict: BITWISE IDENTICAL\x1b[2K";

// No output line may start with the forged verdict, and no ESC may reach the terminal.
void require_not_forged(const std::string& text) {
  INFO(text);
  CHECK_FALSE(contains(text, "\n  verdict: BITWISE"));
  CHECK(text.rfind("  verdict: BITWISE", 0) == std::string::npos);
  CHECK_FALSE(contains(text, "\x1b"));
}

void require_exit(const ra::test::CliResult& r, int code, const std::vector<std::string>& parts) {
  INFO("exit " << r.exit_code << "\nstdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == code);
  for (const std::string& part : parts) CHECK(contains(r.err, part));
}

// Gzipped IDX file of unsigned bytes with `dims`.
void write_idx(const std::filesystem::path& path, const std::vector<std::uint32_t>& dims,
               const std::vector<std::uint8_t>& bytes) {
  std::string raw{'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) raw += static_cast<char>((d >> shift) & 0xFF);
  }
  raw.append(bytes.begin(), bytes.end());
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, raw.data(), static_cast<unsigned>(raw.size())) ==
          static_cast<int>(raw.size()));
  gzclose(f);
}

}  // namespace

TEST_CASE("validate refuses 2^62 samples by JSON path, without allocating", "[cli][limits]") {
  TempDir dir;
  json spec = small_spec();
  spec["data"]["train"]["samples"] = std::int64_t{1} << 62;
  const auto r = run_cli("validate " + write_limits_spec(dir, spec));
  require_exit(r, 2, {"data.train.samples", "expected a positive integer <= 2147483647"});
  // `train` loads the spec the same way: refused before any data is generated.
  require_exit(run_cli("train " + write_limits_spec(dir, spec)), 2, {"data.train.samples"});
}

TEST_CASE("validate refuses a dense layer too large for memory at its path", "[cli][limits]") {
  TempDir dir;
  json spec = small_spec();
  // 2^24 units over 4096 features: 256 GiB of weights, once "out of memory" after validation.
  spec["model"]["input"] = {1, 64, 64};
  spec["data"]["train"]["shape"] = {1, 64, 64};
  spec["data"]["train"]["classes"] = 16777216;
  spec["model"]["layers"] =
      json::array({json{{"type", "flatten"}}, json{{"type", "dense"}, {"units", 16777216}}});
  const auto r = run_cli("validate " + write_limits_spec(dir, spec));
  require_exit(r, 2, {"model.layers[1]", "more than the 64.0 GiB a spec may plan"});
  spec["model"]["layers"][1]["units"] = std::int64_t{1} << 31;  // past the count limit
  require_exit(run_cli("validate " + write_limits_spec(dir, spec)), 2,
               {"model.layers[1].units", "1..16777216"});
}

TEST_CASE("validate prints the memory a run plans", "[cli][limits]") {
  TempDir dir;
  const auto r = run_cli("validate --json " + write_limits_spec(dir, small_spec()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json memory = json::parse(r.out).at("memory");
  CHECK(memory.at("limit") == std::uint64_t{64} << 30);
  CHECK(memory.at("steps") == 3);
  CHECK(memory.at("total").get<std::uint64_t>() > memory.at("parameters").get<std::uint64_t>());
}

TEST_CASE("a spec name that is a path is refused", "[cli][name]") {
  TempDir dir;
  for (const char* name : {"../../x", "/tmp/abs", "..", "a/b"}) {
    json spec = small_spec();
    spec["name"] = name;
    const auto r = run_cli("run " + write_limits_spec(dir, spec) + " --runs 1");
    require_exit(r, 2, {"name: expected one file-name component"});
  }
  // Nothing was written outside (or inside) repro-audit-out/ of the working folder.
  CHECK_FALSE(std::filesystem::exists(dir.path() / "x"));
}

TEST_CASE("a forged verdict in a spec name cannot reach validate's output or the log",
          "[cli][name][printable]") {
  TempDir dir;
  json spec = small_spec();
  spec["name"] = kForgedName;
  const auto r = run_cli("validate " + write_limits_spec(dir, spec));
  require_exit(r, 2, {"name: expected one file-name component", "x\\n  verdict"});
  require_not_forged(r.out + r.err);
  // A layer name is reported escaped too.
  spec = small_spec();
  spec["model"]["layers"][0]["name"] = kForgedName;
  const auto layer = run_cli("validate " + write_limits_spec(dir, spec));
  require_exit(layer, 2, {"model.layers[0].name", "\\x1b[2K"});
  require_not_forged(layer.out + layer.err);
  // File paths in error messages are escaped in the log.
  spec = small_spec();
  spec["data"]["train"] = {{"format", "idx"}, {"images", kForgedName}, {"labels", kForgedName}};
  const auto path = run_cli("train " + write_limits_spec(dir, spec));
  REQUIRE(path.exit_code == 2);
  require_not_forged(path.out + path.err);
}

TEST_CASE("a forged verdict in a trace's spec name cannot reach the text report",
          "[cli][printable]") {
  TempDir dir;
  const auto out = dir.path() / "out";
  const auto r =
      run_cli("run " + write_limits_spec(dir, small_spec()) + " --runs 2 --out " + quoted(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Give both traces the hostile name, with a consistent digest, as a hand-made trace would.
  std::vector<std::string> files;
  for (const char* name : {"run-000.trace.jsonl", "run-001.trace.jsonl"}) {
    const auto file = out / name;
    std::istringstream in(ra::test::read_text(file));
    std::string header_line, rest, line;
    std::getline(in, header_line);
    while (std::getline(in, line)) rest += line + "\n";
    json header = json::parse(header_line);
    json& spec = header.at("spec");
    spec["name"] = kForgedName;
    const std::string text = spec.dump();
    const std::string digest =
        ra::digest_bytes(ra::DType::u8, ra::Shape{static_cast<std::int64_t>(text.size())},
                         text.data(), text.size())
            .hex();
    header["spec_digest"] = digest;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << header.dump() << "\n" << rest;
    files.push_back(quoted(file));
  }
  const auto c = run_cli("compare " + files[0] + " " + files[1]);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(contains(c.out, "repro-audit: x\\n  verdict: BITWISE IDENTICAL\\x1b[2K, 2 runs"));
  require_not_forged(c.out + c.err);
  // The JSON report carries the name as JSON escapes it.
  const auto j = run_cli("compare " + files[0] + " " + files[1] + " --json -");
  REQUIRE(j.exit_code == 0);
  CHECK(json::parse(j.out).at("spec").at("name") == kForgedName);
  CHECK_FALSE(contains(j.out, "\x1b"));
}

TEST_CASE("run, compare and exec: --tolerance must be a finite positive number", "[cli][options]") {
  TempDir dir;
  for (const char* value : {"nan", "inf", "-1", "0", "1e400"}) {
    const auto r = run_cli("run " + write_limits_spec(dir, small_spec()) + " --runs 1 --out " +
                           quoted(dir.path() / "o") + " --tolerance " + value);
    require_exit(r, 2, {"--tolerance", "expected a finite number > 0"});
  }
  const auto c = run_cli("compare " + quoted(dir.path()) + " --tolerance nan");
  require_exit(c, 2, {"--tolerance", "finite"});
  // exec's too (issue 61: it took nan, -1, inf and 0), refused before the command runs.
  for (const char* value : {"nan", "inf", "-1", "0"}) {
    const auto e = run_cli("exec --runs 2 --out " + quoted(dir.path() / "e") + " --tolerance " +
                           value + " -- /bin/false");
    require_exit(e, 2, {"--tolerance", "expected a finite number > 0"});
    CHECK_FALSE(std::filesystem::exists(dir.path() / "e"));
  }
}

TEST_CASE("train: --seed refuses negative and out-of-range values instead of wrapping",
          "[cli][options]") {
  TempDir dir;
  for (const char* value : {"-1", "18446744073709551616"}) {
    const auto r = run_cli("train " + write_limits_spec(dir, small_spec()) + " --seed " + value);
    require_exit(r, 2, {"--seed", "expected an integer in 0..18446744073709551615"});
  }
  for (const char* value : {"1x", "' '"}) {  // not a number at all: a type error
    const auto r = run_cli("train " + write_limits_spec(dir, small_spec()) + " --seed " + value);
    require_exit(r, 2, {"--seed: expected a whole number, got"});
  }
  const auto ok = run_cli("train " + write_limits_spec(dir, small_spec()) +
                          " --json --seed 18446744073709551615");
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(json::parse(ok.out).at("seed") == std::uint64_t{18446744073709551615u});
}

TEST_CASE("run: an --inject-fault that would never fire is refused before training",
          "[cli][options]") {
  TempDir dir;
  const std::string spec = write_limits_spec(dir, small_spec());  // 3 steps, 1 run of 2
  const auto run = [&](const std::string& fault) {
    return run_cli("run " + spec + " --runs 2 --out " + quoted(dir.path() / "out") +
                   " --inject-fault " + fault);
  };
  require_exit(run("run=2,step=0,tensor=batch"), 2, {"--inject-fault", "run 2"});
  require_exit(run("run=1,step=3,tensor=batch"), 2,
               {"--inject-fault: step 3 never runs", "3 steps (0..2)"});
  require_exit(run("run=1,step=0,tensor=dense_0.weight,element=96"), 2,
               {"--inject-fault: element 96 is outside dense_0.weight", "96 elements"});
  require_exit(run("run=1,step=0,tensor=dense_9.weight"), 2,
               {"--inject-fault: the model has no tensor 'dense_9.weight'", "conv2d_0.weight"});
  require_exit(run("run=1,step=-1,tensor=batch"), 2, {"--inject-fault: step must be"});
  require_exit(run("run=1x,step=0,tensor=batch"), 2, {"--inject-fault: run must be", "'1x'"});
  // Refused before training: no trace was written.
  CHECK_FALSE(std::filesystem::exists(dir.path() / "out" / "run-000.trace.jsonl"));
}

TEST_CASE("an idx label outside the model's classes names the sample and the file", "[cli][data]") {
  TempDir dir;
  // 8 images of 6x6; sample 5 has label 7, the model has 3 outputs.
  write_idx(dir.path() / "images.gz", {8, 6, 6}, std::vector<std::uint8_t>(8 * 36, 100));
  write_idx(dir.path() / "labels.gz", {8}, {0, 1, 2, 0, 1, 7, 2, 0});
  json spec = small_spec();
  spec["data"]["train"] = {{"format", "idx"}, {"images", "images.gz"}, {"labels", "labels.gz"}};
  const auto r = run_cli("train " + write_limits_spec(dir, spec));
  require_exit(r, 2, {"data.train: label 7 of sample 5 in", "labels.gz", "3 classes (0..2)"});
}

TEST_CASE("threads the system refuses end the audit with exit 3, no hang or abort",
          "[cli][threads]") {
  // Root ignores ulimit -u, so the refusal comes from the test hook (core/thread_start.h): the
  // first thread start succeeds, the second fails. --jobs 2 starts two audit jobs.
  TempDir dir;
  json spec = small_spec();
  ::setenv("REPRO_AUDIT_TEST_THREAD_LIMIT", "1", 1);
  const auto jobs = run_cli("run " + write_limits_spec(dir, spec) + " --runs 2 --jobs 2 --out " +
                            quoted(dir.path() / "jobs"));
  // A thread pool of 4 threads per run: 3 worker starts.
  spec["threads"] = 4;
  const auto pool = run_cli("train " + write_limits_spec(dir, spec));
  ::unsetenv("REPRO_AUDIT_TEST_THREAD_LIMIT");
  require_exit(jobs, 3, {"cannot start", "ulimit -u"});
  CHECK_FALSE(contains(jobs.err, "terminate"));
  require_exit(pool, 3, {"cannot start thread pool worker 2 of 3", "--threads"});
}

TEST_CASE("a usage error repeats the argument escaped", "[cli][printable]") {
  TempDir dir;
  const auto r = run_cli("run " + write_limits_spec(dir, small_spec()) +
                         " --mode \"$(printf 'x\\n  verdict: BITWISE IDENTICAL\\033[2K')\"");
  require_exit(r, 2, {"--mode", "x\\n  verdict: BITWISE IDENTICAL\\x1b[2K"});
  require_not_forged(r.out + r.err);
}
