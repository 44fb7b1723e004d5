#pragma once
// The header of a trace made up in a test of tests/trace: a spec named `name` with its digest, one
// CPU thread, deterministic, no fault; the test adds its parameters and optimizer state.
#include <string>

#include <nlohmann/json.hpp>

#include "trace/trace.h"
#include "trace/trace_io.h"

namespace ra::test {

inline trace::TraceHeader test_header(const std::string& name, int format_version) {
  trace::TraceHeader h;
  h.format_version = format_version;
  h.tool_version = "test";
  h.spec = {{"name", name}};
  h.spec_digest = trace::spec_digest_of(h.spec).hex();
  h.seed_group = "same";
  h.backend = "cpu";
  h.threads = 1;
  h.determinism = {{"mode", "deterministic"}, {"ops", nlohmann::json::object()}};
  h.environment = nlohmann::json::object();
  h.fault = nullptr;
  return h;
}

}  // namespace ra::test
