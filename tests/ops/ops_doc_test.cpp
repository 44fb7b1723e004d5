// Keeps the op table and docs/ops.md honest against lib/backend/ops.h: every op the interface
// declares has cases in the table and a row in docs/ops.md naming its declaration's line, and every
// file the document names exists. Reads three files: no build of anything, no network.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "core/atomic_file.h"
#include "ops/op_case.h"
#include "support/text_lines.h"

namespace {

const std::filesystem::path kSource = REPRO_AUDIT_SOURCE_DIR;

// The lines of a file of the source tree (core's read_file: a missing file is an InputError naming
// it, which fails the test with that message).
std::vector<std::string> lines_of(const std::filesystem::path& path) {
  return ra::test::lines_of(ra::read_file(path));
}

// The ops of ops.h (virtual methods after its first "// ---- family ----" line, which follow the
// backend's identity: name, threads, memory, ledger, fingerprint) and their declaration lines.
// A const method there is a question to the backend (fuses_conv_maxpool), not an op: skipped.
std::map<std::string, int> declared_ops() {
  const std::vector<std::string> lines = lines_of(kSource / "lib/backend/ops.h");
  const std::regex declaration(R"(^\s*virtual\s.*?\b([a-z0-9_]+)\()");
  std::map<std::string, int> ops;
  bool in_ops = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("// ---- ") != std::string::npos) in_ops = true;
    std::smatch match;
    const bool query = lines[i].find(") const") != std::string::npos;
    if (in_ops && !query && std::regex_search(lines[i], match, declaration)) {
      ops[match[1]] = int(i) + 1;
    }
  }
  return ops;
}

}  // namespace

TEST_CASE("every op of ops.h has cases in the op table", "[ops][docs]") {
  const std::map<std::string, int> declared = declared_ops();
  REQUIRE(declared.size() >= 20);  // the parse found the interface
  const std::vector<std::string> covered = ops_test::op_names();
  for (const auto& [op, line] : declared) {
    INFO("lib/backend/ops.h:" << line << " declares " << op << ", which tests/ops has no case of");
    CHECK(std::find(covered.begin(), covered.end(), op) != covered.end());
  }
  for (const std::string& op : covered) {
    INFO("tests/ops has cases of " << op << ", which ops.h does not declare");
    CHECK(declared.count(op) == 1);
  }
}

TEST_CASE("docs/ops.md has one row per op of ops.h, naming its declaration", "[ops][docs]") {
  const std::vector<std::string> doc = lines_of(kSource / "docs/ops.md");
  for (const auto& [op, line] : declared_ops()) {
    const std::string row_start = "| `" + op + "` |";
    int rows = 0;
    std::string row;
    for (const std::string& l : doc) {
      if (l.rfind(row_start, 0) == 0) ++rows, row = l;
    }
    INFO("docs/ops.md, the row of " << op);
    REQUIRE(rows == 1);
    const std::string contract = "lib/backend/ops.h:" + std::to_string(line);
    INFO("must name its declaration, " << contract << ": " << row);
    CHECK(row.find(contract + "`") != std::string::npos);
  }
}

TEST_CASE("every file docs/ops.md names exists", "[ops][docs]") {
  const std::vector<std::string> doc = lines_of(kSource / "docs/ops.md");
  // `lib/...`, `kernels/...`, `tests/...`, `docs/...`, `scripts/...`, optionally with :line.
  const std::regex path(R"(`((?:lib|kernels|tests|docs|scripts)/[A-Za-z0-9_./-]+)(?::(\d+))?)");
  int paths = 0;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    for (std::sregex_iterator it(doc[i].begin(), doc[i].end(), path), end; it != end; ++it) {
      const std::string file = (*it)[1];
      ++paths;
      INFO("docs/ops.md:" << i + 1 << " names " << file);
      REQUIRE(std::filesystem::exists(kSource / file));
      if ((*it)[2].matched) {
        const int line = std::stoi((*it)[2]);
        INFO("line " << line);
        REQUIRE(line <= int(lines_of(kSource / file).size()));
      }
    }
  }
  REQUIRE(paths > 50);
}
