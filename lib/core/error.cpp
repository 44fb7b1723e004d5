#include "core/error.h"

namespace ra {
namespace {
std::string join_problems(const std::vector<Problem>& problems) {
  std::string text = std::to_string(problems.size()) +
                     (problems.size() == 1 ? " problem" : " problems") + " found:";
  for (const Problem& p : problems) {
    text += "\n  " + (p.path.empty() ? std::string("(document)") : p.path) + ": " + p.message;
  }
  return text;
}
}  // namespace

ValidationError::ValidationError(std::vector<Problem> problems)
    : InputError(join_problems(problems)), problems_(std::move(problems)) {}

}  // namespace ra
