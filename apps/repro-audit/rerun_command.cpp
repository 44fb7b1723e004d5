#include "rerun_command.h"

#include <set>
#include <vector>

#include "commands.h"

namespace ra::app {

std::string shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,+@%") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string rerun_with_window(const std::string& window, const std::filesystem::path& out,
                              bool tensor_digests) {
  static const std::set<std::string> dropped_with_value{"--trace-ops", "--out",  "--json",
                                                        "--junit",     "--html", "--shard"};
  static const std::set<std::string> dropped{"--resume", "--overwrite"};
  const std::string added = " --trace-ops " + window +
                            (tensor_digests ? " --tensor-digests " + window : std::string()) +
                            " --out " + shell_word(out.string() + "-ops");
  std::string command = "repro-audit";
  const std::vector<std::string>& args = command_arguments();
  std::size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string name = args[i].substr(0, args[i].find('='));
    if (dropped.contains(args[i])) continue;
    // "none" excludes every other level of detail (trace/tensor_digests.h): the added window
    // replaces it, where any other level combines with the window.
    if (tensor_digests && name == "--tensor-digests") {
      const bool inline_value = name != args[i];
      const std::string value = inline_value          ? args[i].substr(name.size() + 1)
                                : i + 1 < args.size() ? args[i + 1]
                                                      : "";
      if (value == "none") {
        if (!inline_value) ++i;
        continue;
      }
    }
    if (dropped_with_value.contains(name)) {
      if (name == args[i]) ++i;  // "--out DIR": its value too
      continue;
    }
    command += " " + shell_word(args[i]);
  }
  command += added;
  for (; i < args.size(); ++i) command += " " + shell_word(args[i]);  // "--" and the command
  return command;
}

std::string rerun_without(const std::set<std::string>& dropped) {
  std::string command = "repro-audit";
  const std::vector<std::string>& args = command_arguments();
  bool commands_own = false;  // after "--": exec's command, never the tool's options
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string name = args[i].substr(0, args[i].find('='));
    commands_own = commands_own || args[i] == "--";
    if (!commands_own && dropped.contains(name)) {
      if (name == args[i]) ++i;  // "--mode X": its value too
      continue;
    }
    command += " " + shell_word(args[i]);
  }
  return command;
}

}  // namespace ra::app
