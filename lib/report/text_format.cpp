#include "report/text_format.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <set>

#include "core/printable.h"

namespace ra::report::text {

std::string shown(const std::string& text) {
  return printable(text);
}

std::string format(const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

std::string runs_count(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " run" : " runs");
}

std::string mode_words(const compare::ComparisonResult& r) {
  if (!r.subject.pytorch) return "mode " + shown(r.subject.mode_summary);
  const std::string on = r.subject.mode_summary == "deterministic" ? "on"
                         : r.subject.mode_summary == "mixed"       ? "on in some runs"
                                                                   : "off";
  return "torch.use_deterministic_algorithms " + on;
}

std::string perturbed_kernels(const compare::ComparisonResult& r) {
  return r.subject.pytorch ? "the script's own kernel settings" : "deterministic kernels";
}

std::string byte_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double value = static_cast<double>(bytes) / 1024.0;
  for (const char* unit : {"KiB", "MiB"}) {
    // 1023.95 KiB prints as "1024.0 KiB": move up from where one decimal would round to 1024.
    if (value < 1023.95) return format("%.1f %s", value, unit);
    value /= 1024.0;
  }
  return format("%.1f GiB", value);
}

std::string run_list(const std::vector<int>& runs) {
  std::string s;
  for (std::size_t i = 0; i < runs.size() && i < kRunsShown; ++i) {
    s += (i ? "," : "") + std::to_string(runs[i]);
  }
  if (runs.size() > kRunsShown) s += format(" ... (%zu more)", runs.size() - kRunsShown);
  return s;
}

std::string cut_long_lines(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    const std::size_t length = end - start;
    if (length <= kMaxLineLength) {
      out.append(text, start, length);
    } else {
      // The suffix fits in what is cut: at most 20 digits and 24 characters.
      constexpr std::size_t kSuffixRoom = 48;
      const std::size_t kept = kMaxLineLength - kSuffixRoom;
      out.append(text, start, kept);
      out += format("... (%zu more characters)", length - kept);
    }
    if (newline) out += '\n';
    start = end + 1;
  }
  return out;
}

std::string wrapped(const std::string& line, std::size_t width, const std::string& indent) {
  // The line's own indentation stays: words start after it.
  std::size_t start = std::min(line.find_first_not_of(' '), line.size());
  std::string out, current = line.substr(0, start);
  bool first_word = true;
  while (start <= line.size()) {
    std::size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    const std::string word = line.substr(start, end - start);
    if (!first_word && current.size() + 1 + word.size() > width) {
      out += current + "\n";
      current = indent + word;
    } else {
      current += (first_word ? "" : " ") + word;
    }
    first_word = false;
    start = end + 1;
  }
  return out + current + "\n";
}

std::string short_algorithm(const std::string& name) {
  static const char* const kPrefixes[] = {"CUDNN_CONVOLUTION_FWD_ALGO_",
                                          "CUDNN_CONVOLUTION_BWD_DATA_ALGO_",
                                          "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_"};
  for (const char* prefix : kPrefixes) {
    const std::string p(prefix);
    if (name.size() <= p.size() || name.compare(0, p.size(), p) != 0) continue;
    std::string rest = name.substr(p.size());
    const bool numbered = rest.find_first_not_of("0123456789") == std::string::npos;
    return numbered ? "ALGO_" + rest : rest;
  }
  return name;
}

std::string algorithm_group_text(const compare::AlgorithmGroup& g) {
  return "{" + run_list(g.runs) + "} " +
         (g.algorithm.empty() ? std::string("(none)") : shown(short_algorithm(g.algorithm)));
}

std::string algorithm_facts(const compare::AlgorithmGroup& g) {
  std::string out;
  if (g.deterministic) out = *g.deterministic ? "deterministic" : "NOT deterministic";
  if (!g.chosen_by.empty()) out += (out.empty() ? "" : ", ") + shown(g.chosen_by);
  if (!g.autotune_ms.empty()) {
    const auto [low, high] = std::minmax_element(g.autotune_ms.begin(), g.autotune_ms.end());
    out += (out.empty() ? "" : ", ") +
           (*low == *high ? format("%.3g ms", *low) : format("%.3g..%.3g ms", *low, *high));
  }
  return out;
}

std::string ledger_difference_text(const compare::LedgerDifference& d) {
  // At most this many groups are named; the rest are counted (JSON has them all).
  constexpr std::size_t kGroupsShown = 6;
  std::string out = shown(d.layer) + " " + shown(d.direction) + ":";
  std::set<std::string> choosers;
  std::size_t deterministic = 0, known = 0;
  for (std::size_t i = 0; i < d.groups.size(); ++i) {
    const compare::AlgorithmGroup& g = d.groups[i];
    if (i < kGroupsShown) out += (i ? ", " : " ") + algorithm_group_text(g);
    if (!g.chosen_by.empty()) choosers.insert(g.chosen_by);
    if (g.deterministic) {
      ++known;
      if (*g.deterministic) ++deterministic;
    }
  }
  if (d.groups.size() > kGroupsShown) {
    out += format(" ... (%zu more)", d.groups.size() - kGroupsShown);
  }
  std::string how;
  for (const std::string& c : choosers) how += (how.empty() ? "" : ", ") + shown(c);
  std::string determinism;
  if (known > 0 && deterministic == known) {
    determinism = known == 1 ? "deterministic" : "all deterministic";
  } else if (known > 0) {
    for (const compare::AlgorithmGroup& g : d.groups) {
      if (g.deterministic == false) {
        determinism += (determinism.empty() ? "NOT deterministic: " : ", ") +
                       shown(short_algorithm(g.algorithm));
      }
    }
  }
  if (!how.empty() || !determinism.empty()) {
    out += " (" + how + (how.empty() || determinism.empty() ? "" : "; ") + determinism + ")";
  }
  return out;
}

std::string category_title(compare::Category c) {
  using compare::Category;
  switch (c) {
    case Category::initial_weights:
      return "initial weights";
    case Category::batches:
      return "batches";
    case Category::buffers:
      return "buffers";
    case Category::losses:
      return "losses";
    case Category::gradients:
      return "gradients";
    case Category::weights:
      return "weights";
    case Category::optimizer_state:
      return "optimizer state";
    case Category::steps:
      return "number of steps";
  }
  return "?";
}

// Epochs and batches as the trace numbers them, from 0, as the script passed them (epoch=0) and
// as steps and runs are numbered.
std::string divergence_tensor(const compare::Divergence& d) {
  return d.per_category ? "(one digest for all, at this step)" : shown(d.tensor);
}

std::string where(const compare::Divergence& d) {
  if (!d.step) return "before step 0";
  return format("step %lld (epoch %lld, batch %lld)", static_cast<long long>(*d.step),
                static_cast<long long>(d.epoch), static_cast<long long>(d.batch));
}

std::string first_line(const std::string& section) {
  return section.substr(0, section.find('\n'));
}

std::string after_first_line(const std::string& section) {
  const std::size_t end = section.find('\n');
  return end == std::string::npos ? std::string() : section.substr(end + 1);
}

}  // namespace ra::report::text
