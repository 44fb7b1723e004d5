#pragma once
// The --trace-ops window: which steps' ops a run records (trace/trace.h OpWindow).
#include <string>

#include "trace/trace.h"

namespace ra::trace {

// "A:B" (steps A..B-1, half open like a Python slice), "A:" (from A to the end), "all", or "N"
// (step N alone: N:N+1).
// InputError naming the text otherwise, or when B <= A.
// `option` names the option in messages (--tensor-digests takes windows too).
OpWindow parse_op_window(const std::string& text, const std::string& option = "--trace-ops");
// The same text back ("0:50", "10:", "all").
std::string to_string(const OpWindow& window);

}  // namespace ra::trace
