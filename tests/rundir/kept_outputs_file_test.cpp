// The outputs PyTorch runs kept (rundir/kept_outputs_file.h): used whole, only for their own run,
// never half. (The op records' types: tests/trace/pytorch_op_records_test.cpp; what the
// comparison says of them: tests/compare/pytorch_root_cause_test.cpp.)
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rundir/kept_outputs_file.h"
#include "support/temp_dir.h"
#include "trace/trace.h"

using Catch::Matchers::Contains;

namespace {

// A kept-outputs file as the recorder writes it: a header line, then per entry a line and bytes.
void write_kept(const std::filesystem::path& file, const std::string& audit_id, int run,
                const std::string& tail_cut = "") {
  std::string text = R"({"audit_id": ")" + audit_id + R"(", "entries": 1, "format_version": 1, )" +
                     R"("record": "kept_outputs", "run_index": )" + std::to_string(run) + "}\n";
  text += R"({"index": 1, "outputs": [{"bytes": 8, "dtype": "f32"}], "step": 3})"
          "\n";
  const float values[2] = {1.5f, -2.0f};
  text.append(reinterpret_cast<const char*>(values), sizeof values);
  text.resize(text.size() - tail_cut.size());
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("kept outputs are used whole and only for their own run", "[rundir][ops][pytorch]") {
  ra::test::TempDir dir;
  const auto file = dir.path / ra::rundir::kKeptOutputsFileName;
  ra::trace::TraceHeader header;
  header.audit_id = "0123456789abcdef0123456789abcdef";
  header.run_index = 2;
  std::vector<ra::rundir::KeptOutputsEntry> entries;

  SECTION("absent: nothing to say") {
    CHECK(ra::rundir::load_kept_outputs(file, header, entries).empty());
    CHECK(entries.empty());
  }
  SECTION("whole and the run's own: its entries, in the file's order") {
    write_kept(file, header.audit_id, 2);
    CHECK(ra::rundir::load_kept_outputs(file, header, entries).empty());
    REQUIRE(entries.size() == 1);
    const ra::rundir::KeptOutputsEntry& kept = entries[0];
    CHECK(kept.step == 3);
    CHECK(kept.index == 1);
    REQUIRE(kept.bytes.size() == 1);
    CHECK(kept.dtypes == std::vector<ra::DType>{ra::DType::f32});
    float values[2];
    std::memcpy(values, kept.bytes[0].data(), sizeof values);
    CHECK(values[0] == 1.5f);
    CHECK(values[1] == -2.0f);
  }
  SECTION("cut short: named as damaged, nothing of it used") {
    write_kept(file, header.audit_id, 2, "abc");
    CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries),
               Contains("damaged (it ends inside an output's bytes), not used"));
    CHECK(entries.empty());
  }
  SECTION("another run's or another audit's: named, not used") {
    write_kept(file, header.audit_id, 1);
    CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries),
               Contains("kept by another run"));
    write_kept(file, "ffffffffffffffffffffffffffffffff", 2);
    CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries),
               Contains("kept by another run"));
    CHECK(entries.empty());
  }
  SECTION("bytes that are not whole elements, or an unknown dtype: damaged") {
    std::ofstream(file, std::ios::binary)
        << R"({"audit_id": ")" + header.audit_id +
               R"(", "entries": 1, "format_version": 1, "record": "kept_outputs", "run_index": 2})"
        << "\n"
        << R"({"index": 0, "outputs": [{"bytes": 3, "dtype": "f32"}], "step": 0})"
        << "\nabc";
    CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries),
               Contains("not whole elements"));
  }
  SECTION("a field of another type: damaged, never an exception of the JSON library") {
    for (const char* head : {R"({"record": 7})", R"({"record": "kept_outputs", "audit_id": 5})",
                             R"({"record": "kept_outputs", "format_version": "1"})"}) {
      std::ofstream(file, std::ios::binary) << head << "\n";
      CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries), Contains("damaged"));
    }
    std::ofstream(file, std::ios::binary)
        << R"({"audit_id": ")" + header.audit_id +
               R"(", "entries": 1, "format_version": 1, "record": "kept_outputs", "run_index": 2})"
        << "\n"
        << R"({"index": 0, "outputs": [{"bytes": 4, "dtype": ["f32"]}], "step": 0})"
        << "\nabcd";
    CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries), Contains("damaged"));
    CHECK(entries.empty());
  }
  SECTION("a FIFO or a link under the name: not read, without waiting") {
    REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
    CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries), Contains("FIFO"));
    std::filesystem::remove(file);
    write_kept(dir.path / "elsewhere.bin", header.audit_id, 2);
    std::filesystem::create_symlink(dir.path / "elsewhere.bin", file);
    CHECK_THAT(ra::rundir::load_kept_outputs(file, header, entries),
               Contains("is a symbolic link, never followed"));
    CHECK(entries.empty());
  }
}
