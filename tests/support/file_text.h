#pragma once
// A file's whole text, for tests that check what the tool or the library wrote.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ra::test {

// The file's bytes as a string; "" where there is no such file.
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ra::test
