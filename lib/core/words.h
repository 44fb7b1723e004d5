#pragma once
// Command words given as one option's text (exec --resume-arg, --versus): split at spaces and
// tabs, no shell quoting, so that what a word holds is plain to read on the command line.
#include <string>
#include <string_view>
#include <vector>

namespace ra {

// The words of `text`, in order; runs of spaces and tabs separate them, and none is empty.
inline std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : text) {
    if (c != ' ' && c != '\t') {
      word += c;
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

}  // namespace ra
