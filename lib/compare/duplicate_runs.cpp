#include "compare/duplicate_runs.h"

#include <filesystem>

#include "core/digest.h"

namespace ra::compare {
namespace {

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

std::vector<std::vector<int>> copies_of_one_run(const std::vector<Digest128>& digests) {
  std::vector<std::vector<int>> groups;
  std::vector<bool> grouped(digests.size(), false);
  for (std::size_t i = 0; i < digests.size(); ++i) {
    if (grouped[i]) continue;
    std::vector<int> group{static_cast<int>(i)};
    for (std::size_t j = i + 1; j < digests.size(); ++j) {
      if (!grouped[j] && digests[j] == digests[i]) {
        group.push_back(static_cast<int>(j));
        grouped[j] = true;
      }
    }
    if (group.size() > 1) groups.push_back(std::move(group));
  }
  return groups;
}

std::string copies_warning(const std::vector<trace::Trace>& traces, const std::vector<int>& group) {
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

}  // namespace ra::compare
