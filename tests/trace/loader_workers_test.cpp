// The end record's loader_workers (PyTorch traces, docs/trace-format.md): written and read back
// as they were; every damaged field is an InputError naming it; traces without them read as
// before.
#include <catch2/catch.hpp>

#include <bit>
#include <string>

#include "core/error.h"
#include "trace/in_memory_traces.h"
#include "trace/trace_io.h"
#include "trace/whole_trace.h"

namespace {

using ra::trace::LoaderWorker;
using ra::trace::Trace;

LoaderWorker worker(std::uint64_t pass, int id, std::uint64_t rng) {
  return {pass, id, 2, {{"dataset.rng", {rng, 1}}, {"numpy", {7, static_cast<std::uint64_t>(id)}}}};
}

// The trace's text with the first occurrence of `from` replaced by `to`.
std::string with_replaced(const Trace& t, const std::string& from, const std::string& to) {
  std::string text = ra::trace::serialize_trace(t);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("loader workers are written and read back as they were", "[trace]") {
  Trace t = ra::test::whole_one_step_trace();
  const Trace plain = ra::trace::parse_trace(ra::trace::serialize_trace(t), "plain");
  CHECK(plain.final->loader_workers.empty());
  CHECK(ra::trace::serialize_trace(t).find("loader_workers") == std::string::npos);

  t.final->loader_workers = {worker(9000000000000000000u, 0, 5), worker(9000000000000000000u, 1, 5),
                             worker(17, 1, 6)};
  const Trace back = ra::trace::parse_trace(ra::trace::serialize_trace(t), "workers");
  CHECK(back.final->loader_workers == t.final->loader_workers);
}

TEST_CASE("damaged loader workers are bad input naming the field", "[trace]") {
  Trace t = ra::test::whole_one_step_trace();
  t.final->loader_workers = {worker(3, 0, 5), worker(3, 1, 5)};
  const auto refused = [&](const std::string& from, const std::string& to, const char* what) {
    INFO(from << " -> " << to);
    CHECK_THROWS_WITH(ra::trace::parse_trace(with_replaced(t, from, to), "run.jsonl"),
                      Catch::Contains(what));
  };
  refused("\"worker\":1", "\"worker\":2", "loader_workers[1].worker");
  refused("\"worker\":1", "\"worker\":0", "worker 0 of loader pass 3 is recorded twice");
  refused("\"workers\":2", "\"workers\":0", "loader_workers[0].workers");
  refused("\"loader_pass\":3", "\"loader_pass\":-3", "loader_workers[0].loader_pass");
  refused("\"streams\":{", "\"streams\":[],\"x\":{", "loader_workers[0].streams");
  refused("\"numpy\":\"", "\"numpy\":\"zz", "loader_workers[0].streams.numpy");
  refused("\"loader_workers\":[", "\"loader_workers\":\"x\",\"y\":[", "field 'loader_workers'");
}
