#pragma once
// How progress lines name a run: from 0, as its trace (run-000.trace.jsonl), the errors and the
// report name it, so "run 0" is the same run everywhere.
#include <string>

namespace ra::app {

// "run 0 of 0..2" for the first of 3 planned runs.
inline std::string run_label(int run, int of) {
  return "run " + std::to_string(run) + " of 0.." + std::to_string(of - 1);
}

}  // namespace ra::app
