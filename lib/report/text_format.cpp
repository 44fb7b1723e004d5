#include "report/text_format.h"

#include <cstdarg>
#include <cstdio>

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

std::string run_list(const std::vector<int>& runs) {
  std::string s;
  for (std::size_t i = 0; i < runs.size(); ++i) s += (i ? "," : "") + std::to_string(runs[i]);
  return s;
}

std::string category_title(audit::Category c) {
  using audit::Category;
  switch (c) {
    case Category::initial_weights:
      return "initial weights";
    case Category::batches:
      return "batches";
    case Category::losses:
      return "losses";
    case Category::gradients:
      return "gradients";
    case Category::weights:
      return "weights";
    case Category::optimizer_state:
      return "optimizer state";
  }
  return "?";
}

std::string where(const audit::Divergence& d) {
  if (!d.step) return "before step 0";
  return format("step %lld (epoch %lld, batch %lld)", static_cast<long long>(*d.step),
                static_cast<long long>(d.epoch + 1), static_cast<long long>(d.batch));
}

}  // namespace ra::report::text
