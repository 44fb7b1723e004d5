// Input made to hurt, end to end: special files, nesting that overflowed the stack, duplicate keys,
// numbers out of range, a 5 MB key and a gzip bomb. Each must exit 2 quickly, with a message that
// names the file and the problem, and never block, crash or eat the machine.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "data/idx_fixtures.h"

namespace fs = std::filesystem;
using ra::test::CliResult;
using ra::test::TempDir;

namespace {

using ra::test::quoted;

struct TimedResult {
  CliResult result;
  double seconds = 0;
};

// Runs the binary like ra::test::run_cli, under timeout(1): a regression that blocks fails the
// test (exit 124, not 2) instead of hanging the suite. The limit is generous because a loaded
// machine can slow the start-up (loading the CUDA libraries) many times over.
TimedResult run_timed(const std::string& args) {
  TempDir tmp;
  const auto out = tmp.path() / "stdout", err = tmp.path() / "stderr";
  const std::string command = std::string("timeout -k 5 90 '") + REPRO_AUDIT_BINARY + "' " + args +
                              " >'" + out.string() + "' 2>'" + err.string() + "' </dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  TimedResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.result.out = ra::test::read_text(out);
  r.result.err = ra::test::read_text(err);
  return r;
}

// The time the binary takes to refuse a missing spec now: its start-up under the machine's
// current load. Timing checks allow twice that plus the work they are about.
double startup_seconds() {
  return run_timed("validate /nonexistent/spec.json").seconds;
}

// Exit code 2, nothing on stdout, stderr naming `file` and `problem`, and no more than
// `work_seconds` beyond start-up (when given).
void require_refused(const TimedResult& r, const std::string& file, const std::string& problem,
                     double work_seconds = -1) {
  INFO("stderr: " << r.result.err.substr(0, 2000));
  CHECK(r.result.exit_code == 2);
  CHECK(r.result.err.find(file) != std::string::npos);
  CHECK(r.result.err.find(problem) != std::string::npos);
  CHECK(r.result.out.empty());
  if (work_seconds >= 0) {
    const double startup = startup_seconds();
    INFO("took " << r.seconds << " s; start-up alone " << startup << " s");
    CHECK(r.seconds < 2 * startup + work_seconds);
  }
}

// A small valid spec on random data.
nlohmann::json valid_spec_json() {
  return nlohmann::json::parse(R"({
    "name": "t", "seed": 1, "threads": 1,
    "data": {"train": {"format": "random", "samples": 64, "shape": [1, 8, 8], "classes": 4},
             "batch_size": 16},
    "model": {"input": [1, 8, 8], "layers": [{"type": "flatten"}, {"type": "dense", "units": 4}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 1}})");
}

}  // namespace

TEST_CASE("a FIFO as spec is refused within a second, not waited on", "[cli][hostile]") {
  TempDir dir;
  const fs::path fifo = dir.path() / "spec.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Without a writer, a blocking open would never return (timeout(1) would end it: exit 124).
  const auto r = run_timed("validate " + quoted(fifo));
  require_refused(r, fifo.string(), "is a FIFO (named pipe), not a regular file", 1.0);
}

TEST_CASE("/dev/zero, a directory and a symlink loop as spec are refused", "[cli][hostile]") {
  TempDir dir;
  require_refused(run_timed("validate /dev/zero"), "/dev/zero",
                  "is a character device, not a regular file", 1.0);
  require_refused(run_timed("train " + quoted(dir.path())), dir.path().string(),
                  "is a directory, not a regular file", 1.0);
  const fs::path loop = dir.path() / "loop.json";
  fs::create_symlink(loop, loop);
  require_refused(run_timed("validate " + quoted(loop)), loop.string(), "a loop of symbolic links",
                  1.0);
}

TEST_CASE("a spec nested 100,000 levels deep is refused, not a crash", "[cli][hostile]") {
  TempDir dir;
  const auto path = dir.write("deep.json", "{\"name\": " + std::string(100000, '[') + "}");
  require_refused(run_timed("validate " + quoted(path)),
                  path.string() + ":1:73:", "objects and arrays nest deeper than 64 levels");
}

TEST_CASE("a repeated key is refused with its line and column", "[cli][hostile]") {
  TempDir dir;
  std::string text = valid_spec_json().dump(2);
  // Repeat "seed" on its own line after "name": the second one is the error.
  const auto at = text.find("  \"seed\"");
  REQUIRE(at != std::string::npos);
  text.insert(at, "  \"seed\": 7,\n");
  const auto path = dir.write("twice.json", text);
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n') + 1;
  require_refused(run_timed("validate " + quoted(path)),
                  path.string() + ":" + std::to_string(line) + ":3: duplicate key \"seed\"",
                  "seed");
}

TEST_CASE("numbers out of range are refused with line and column", "[cli][hostile]") {
  TempDir dir;
  const auto lr = dir.write("lr.json", "{\"optimizer\": {\"lr\": 1e400}}");
  require_refused(run_timed("validate " + quoted(lr)),
                  lr.string() + ":1:22:", "number 1e400 is out of range");
  const auto seed = dir.write("seed.json", "{\"seed\": " + std::string(400, '9') + "}");
  const auto r = run_timed("validate " + quoted(seed));
  require_refused(r, seed.string() + ":1:10:", "is out of range");
  CHECK(r.result.err.find(std::string(100, '9')) == std::string::npos);  // echoed only in part
}

TEST_CASE("a 5 MB unknown key is answered fast, and echoed only in part", "[cli][hostile]") {
  TempDir dir;
  auto spec = valid_spec_json();
  const std::string key(5 << 20, 'q');
  spec["train"][key] = 1;
  const auto path = dir.write("key.json", spec.dump());
  const auto r = run_timed("validate " + quoted(path));
  // 13 s and 866 MB before; the key appeared twice in full (10 MB of stderr).
  require_refused(r, "unknown key 'qqqq", "(5242880 bytes)", 2.0);
  CHECK(r.result.err.size() < 2000);
}

TEST_CASE("a gzip bomb as IDX images is refused by its header", "[cli][hostile]") {
  TempDir dir;
  using namespace ra::data::testing;
  // 4 GiB of 28 x 28 zero images in a file of about 4 MB, with labels to match.
  const std::uint32_t n = 5478274;
  const fs::path images = dir.path() / "bomb-images.gz", labels = dir.path() / "labels.gz";
  write_gz_zeros(images.string(), idx_header({n, 28, 28}), std::uint64_t{n} * 28 * 28);
  write_gz_zeros(labels.string(), idx_header({n}), n);
  REQUIRE(fs::file_size(images) < (8u << 20));
  auto spec = valid_spec_json();
  spec["data"]["train"] = {
      {"format", "idx"}, {"images", images.string()}, {"labels", labels.string()}};
  spec["model"]["input"] = {1, 28, 28};
  const auto path = dir.write("bomb.json", spec.dump());
  require_refused(run_timed("train " + quoted(path)), images.string(),
                  "IDX header declares more than 1 GiB of data", 2.0);
}

TEST_CASE("special files as IDX data are refused", "[cli][hostile]") {
  TempDir dir;
  const fs::path fifo = dir.path() / "labels.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto spec = valid_spec_json();
  spec["data"]["train"] = {{"format", "idx"}, {"images", "/dev/zero"}, {"labels", fifo.string()}};
  const auto path = dir.write("special.json", spec.dump());
  require_refused(run_timed("train " + quoted(path)), "/dev/zero", "is a character device", 1.0);
}

TEST_CASE("hostile traces are refused by compare", "[cli][hostile]") {
  TempDir dir;
  const auto deep = dir.write("a.trace.jsonl", "{\"record\": " + std::string(100000, '[') + "\n");
  const auto twice =
      dir.write("b.trace.jsonl", "{\"record\": \"header\", \"record\": \"header\"}\n");
  require_refused(run_timed("compare " + quoted(deep) + " " + quoted(twice)),
                  deep.string() + ":1:75:", "objects and arrays nest deeper than 64 levels");
  require_refused(run_timed("compare " + quoted(twice) + " " + quoted(deep)),
                  twice.string() + ":1:22:", "duplicate key \"record\"");
  const fs::path fifo = dir.path() / "c.trace.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const fs::path loop = dir.path() / "loop.trace.jsonl";
  fs::create_symlink(loop, loop);
  require_refused(run_timed("compare " + quoted(loop) + " " + quoted(twice)), loop.string(),
                  "a loop of symbolic links");
  require_refused(run_timed("compare " + quoted(fifo) + " " + quoted(twice)), fifo.string(),
                  "is a FIFO", 1.0);
}
