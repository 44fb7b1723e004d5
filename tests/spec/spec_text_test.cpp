// parse_spec_text: spec JSON already in memory (the fuzz target's entry) reads exactly as a file
// does through load_spec, and its errors name the source it was given.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "spec/parse.h"
#include "spec/spec_test_util.h"

namespace fs = std::filesystem;
using namespace ra::spec;

TEST_CASE("parse_spec_text reads a shipped config as load_spec reads its file", "[spec]") {
  const fs::path path = fs::path(REPRO_AUDIT_SOURCE_DIR) / "configs" / "quick.json";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const ExperimentSpec from_text =
      parse_spec_text(text.str(), path.string(), path.parent_path().string());
  CHECK(from_text.name == "quick");  // named in the file, so no file stem is needed
  ra::spec::test::require_same(from_text, load_spec(path.string()));
}

TEST_CASE("parse_spec_text errors name the source given", "[spec]") {
  try {
    parse_spec_text("{\n  \"seed\": ,\n}", "in-memory.json", "/specs");
    FAIL("accepted malformed JSON");
  } catch (const ra::ValidationError& e) {
    FAIL("expected a syntax error, got validation problems: " << e.what());
  } catch (const ra::InputError& e) {
    CHECK(std::string(e.what()).find("in-memory.json:2:11: invalid JSON: expected a value") == 0);
  }

  auto doc = ra::spec::test::small_doc();
  doc["data"]["batch_size"] = 0;
  try {
    parse_spec_text(doc.dump(), "in-memory.json", "/specs");
    FAIL("accepted batch_size 0");
  } catch (const ra::ValidationError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].path == "data.batch_size");
  }
}
