#include "compare/duplicate_runs.h"

#include <filesystem>

#include "core/digest.h"
#include "trace/trace_io.h"

namespace ra::audit {
namespace {

// The trace as the writer would write it: everything it records, timings included.
Digest128 content_digest(const Trace& t) {
  const std::string text = serialize_trace(t);
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(text.size())}, text.data(),
                      text.size());
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  if (a == b) return true;
  std::error_code ec;  // a file gone since it was read is not the same file
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

std::string run_names(const std::vector<int>& group) {
  std::string s;
  for (std::size_t i = 0; i < group.size(); ++i) {
    s += i == 0 ? "" : (i + 1 == group.size() ? " and " : ", ");
    s += std::to_string(group[i]);
  }
  return s;
}

}  // namespace

std::vector<std::vector<int>> copies_of_one_run(const std::vector<Trace>& traces) {
  std::vector<Digest128> digests;
  digests.reserve(traces.size());
  for (const Trace& t : traces) digests.push_back(content_digest(t));
  std::vector<std::vector<int>> groups;
  std::vector<bool> grouped(traces.size(), false);
  for (std::size_t i = 0; i < traces.size(); ++i) {
    if (grouped[i]) continue;
    std::vector<int> group{static_cast<int>(i)};
    for (std::size_t j = i + 1; j < traces.size(); ++j) {
      if (!grouped[j] && digests[j] == digests[i]) {
        group.push_back(static_cast<int>(j));
        grouped[j] = true;
      }
    }
    if (group.size() > 1) groups.push_back(std::move(group));
  }
  return groups;
}

std::string copies_warning(const std::vector<Trace>& traces, const std::vector<int>& group) {
  bool one_file = true;
  std::string sources;
  for (int run : group) {
    one_file &= same_file(traces[group[0]].source, traces[run].source);
    if (!traces[run].source.empty()) sources += (sources.empty() ? "" : ", ") + traces[run].source;
  }
  const std::string what = one_file
                               ? "the same file (" + traces[group[0]].source + ")"
                               : "copies of one run (" + (sources.empty() ? "" : sources + ": ") +
                                     "identical header and records, every step's time included)";
  return "runs " + run_names(group) + " are " + what +
         ": their agreement says nothing about reproducibility";
}

}  // namespace ra::audit
