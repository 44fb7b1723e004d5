// load_spec: file errors name the file (and the line of a JSON syntax error); the spec's folder
// is the base of relative data paths; the file stem is the default name; the shipped configs load.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "spec/spec_test_util.h"

namespace fs = std::filesystem;
using namespace ra::spec;
using ra::spec::test::json;

namespace {

// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ra-spec-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path file = path_ / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }

 private:
  fs::path path_;
};

std::string input_error_of(const std::string& path) {
  try {
    load_spec(path);
  } catch (const ra::ValidationError& e) {
    FAIL("expected a file error, got validation problems: " << e.what());
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("load_spec accepted " << path);
  return {};
}

}  // namespace

TEST_CASE("a missing spec file is an input error naming the file", "[spec]") {
  const std::string message = input_error_of("/nonexistent/spec.json");
  CHECK(message.find("/nonexistent/spec.json") == 0);
  CHECK(message.find("cannot open") != std::string::npos);

  TempDir dir;
  CHECK(input_error_of(dir.path().string()).find("is a directory") != std::string::npos);
}

TEST_CASE("malformed JSON names the file, the line and the column", "[spec]") {
  TempDir dir;
  const std::string path = dir.write("broken.json", "{\n  \"name\": \"x\",\n  \"seed\": ,\n}\n");
  const std::string message = input_error_of(path);
  INFO(message);
  CHECK(message.find(path + ":3:11: invalid JSON: expected a value, found ','") == 0);

  const std::string empty = dir.write("empty.json", "");
  CHECK(input_error_of(empty).find(empty + ":1:1: invalid JSON") == 0);
}

TEST_CASE("a spec with a repeated key, a number out of range or deep nesting is refused",
          "[spec]") {
  TempDir dir;
  const std::string twice = dir.write("twice.json", "{\n  \"seed\": 1,\n  \"seed\": 2\n}\n");
  CHECK(input_error_of(twice).find(twice + ":3:3: duplicate key \"seed\"") == 0);
  const std::string huge = dir.write("huge.json", "{\"seed\": 1, \"optimizer\": {\"lr\": 1e400}}");
  CHECK(input_error_of(huge).find(huge + ":1:33: number 1e400 is out of range") == 0);
  const std::string deep = dir.write("deep.json", "{\"name\": " + std::string(50000, '[') + "}");
  CHECK(input_error_of(deep).find(deep + ":1:73: objects and arrays nest deeper than 64") == 0);
}

TEST_CASE("a spec path that is not a regular file is refused without blocking", "[spec]") {
  TempDir dir;
  // A FIFO with no writer: opening it for reading would wait forever without O_NONBLOCK.
  const std::string fifo = (dir.path() / "spec.fifo").string();
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(input_error_of(fifo).find(fifo + ": is a FIFO (named pipe), not a regular file") == 0);
  // /dev/zero never ends.
  CHECK(input_error_of("/dev/zero").find("/dev/zero: is a character device") == 0);
  const std::string loop = (dir.path() / "loop.json").string();
  fs::create_symlink(loop, loop);
  CHECK(input_error_of(loop).find(loop + ": cannot open (a loop of symbolic links)") == 0);
  // Over 16 MiB (a data file given by mistake): refused by its size, before parsing.
  const std::string big = dir.write("big.json", std::string((16 << 20) + 1, ' '));
  CHECK(input_error_of(big).find(big + ": larger than 16 MiB, the limit for a spec file") == 0);
}

TEST_CASE("validation problems of a file keep their JSON paths", "[spec]") {
  TempDir dir;
  json doc = ra::spec::test::small_doc();
  doc["data"]["batch_size"] = 0;
  const std::string path = dir.write("bad.json", doc.dump(2));
  try {
    load_spec(path);
    FAIL("accepted");
  } catch (const ra::ValidationError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].path == "data.batch_size");
  }
}

TEST_CASE("load_spec: base folder, relative data paths and the default name", "[spec]") {
  TempDir dir;
  json doc = ra::spec::test::small_doc();
  doc["data"]["eval"] = {
      {"format", "idx"}, {"images", "../data/t10k-images.gz"}, {"labels", "labels.gz"}};
  doc["data"]["eval"]["format"] = "idx";
  const std::string path = dir.write("specs/my-experiment.json", doc.dump());

  const ExperimentSpec s = load_spec(path);
  CHECK(s.name == "my-experiment");
  CHECK(s.base_dir == (dir.path() / "specs").string());
  CHECK(s.data.eval->images == (dir.path() / "data" / "t10k-images.gz").string());
  CHECK(s.data.eval->labels == (dir.path() / "specs" / "labels.gz").string());

  // Paths are stored absolute: reading the canonical JSON again from the same folder, or from
  // another one, gives the same files.
  const ExperimentSpec again = parse_spec(to_json(s), s.base_dir);
  CHECK(again.data.eval->images == s.data.eval->images);
  CHECK(parse_spec(to_json(s), "/elsewhere").data.eval->labels == s.data.eval->labels);

  // An explicit name wins over the file name.
  doc["name"] = "named";
  CHECK(load_spec(dir.write("specs/other.json", doc.dump())).name == "named");
}

TEST_CASE("the shipped configs load, resolve and round-trip", "[spec]") {
  const fs::path configs = fs::path(REPRO_AUDIT_SOURCE_DIR) / "configs";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(configs)) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path());
    ++count;
    const ExperimentSpec s = load_spec(entry.path().string());
    CHECK(s.name == entry.path().stem().string());
    const ResolvedModel r = resolve_model(s.model);
    CHECK(r.output.size() == 1);
    ra::spec::test::require_same(s, parse_spec(to_json(s), s.base_dir));
  }
  CHECK(count >= 1);
}
