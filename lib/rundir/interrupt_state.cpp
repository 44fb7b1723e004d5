#include "rundir/interrupt_state.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/atomic_file.h"
#include "core/directory.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/words.h"
#include "formats/json_text.h"

namespace ra::rundir {
namespace {

// The file holds the trace's state so far: its header and one float per step (the median's
// times), a few MiB for a long run. 256 MiB is far past any, and bounds what a file put in the
// folder can make exec read.
constexpr std::uint64_t kMaxInterruptStateBytes = std::uint64_t{256} << 20;

std::string read_state_text(const std::filesystem::path& file) {
  return read_file(file, kMaxInterruptStateBytes, "a recorder's file", Links::refuse);
}

std::int64_t positive_integer(const nlohmann::json& j, const char* key,
                              const std::filesystem::path& file) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 1) {
    throw InputError(file.string() + ": '" + key + "': expected an integer >= 1");
  }
  return it->get<std::int64_t>();
}

std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t slash = name.find('/');; slash = name.find('/', start)) {
    parts.push_back(name.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

}  // namespace

InterruptState read_interrupt_state(const std::filesystem::path& file) {
  const nlohmann::json j = formats::parse_json_text(read_state_text(file), file.string());
  if (!j.is_object() || !j.contains("format") || j["format"] != kInterruptStateFormat) {
    throw InputError(file.string() + ": not a recorder's file of an interrupt (format '" +
                     std::string(kInterruptStateFormat) + "')");
  }
  if (!j.contains("version") || j["version"] != kInterruptStateVersion) {
    throw InputError(file.string() + ": version " +
                     (j.contains("version") ? formats::json_excerpt(j["version"]) : "none") +
                     "; this repro-audit reads version " + std::to_string(kInterruptStateVersion) +
                     ": is the command's repro_audit another version than this tool's?");
  }
  InterruptState s;
  s.interrupt_at = positive_integer(j, "interrupt_at", file);
  s.step = positive_integer(j, "step", file);
  if (s.step < s.interrupt_at) {
    throw InputError(file.string() + ": 'step' " + std::to_string(s.step) +
                     " is before the interrupt's step " + std::to_string(s.interrupt_at));
  }
  const auto c = j.find("checkpoint");
  if (c == j.end() || !c->is_object() || !c->contains("file") || !(*c)["file"].is_string()) {
    throw InputError(file.string() + ": 'checkpoint': expected {\"file\": NAME, ...}");
  }
  s.checkpoint_file = (*c)["file"].get<std::string>();
  return s;
}

std::filesystem::path checkpoint_in_folder(const std::filesystem::path& folder,
                                           const std::string& name) {
  const std::vector<std::string> parts = name_parts(name);
  for (const std::string& part : parts) {
    if (part.empty() || part == "." || part == "..") {
      throw InputError("the checkpoint's name '" + name + "' is not a name in the folder " +
                       folder.string() + " (a relative path without '.' or '..')");
    }
  }
  std::optional<Directory> at = Directory::open(folder);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    at = at->subfolder(parts[i], false);  // InputError for a link or anything but a folder
    if (!at) throw InputError("the checkpoint " + (folder / name).string() + " is not there");
  }
  if (at->kind(parts.back()) != Directory::Kind::file) {
    throw InputError("the checkpoint " + (folder / name).string() + " is " +
                     at->describe(parts.back()) + ", not a regular file");
  }
  std::filesystem::path path = folder;
  for (const std::string& part : parts) path /= part;
  return path;
}

// --resume-arg's words (split at spaces and tabs: no quoting; the checkpoint's path, put in after
// the split, stays one word); InputError when it is given without --interrupt-at, or names no
// {checkpoint}, the only way the script learns its file from it.
std::vector<std::string> parse_resume_arg(const std::string& text, bool interrupts) {
  std::vector<std::string> words = split_words(text);
  if (text.empty()) return words;
  if (!interrupts) throw InputError("--resume-arg is for --interrupt-at: give both, or neither");
  if (text.find("{checkpoint}") == std::string::npos) {
    throw InputError("--resume-arg '" + text +
                     "': names no {checkpoint}, the file the script saved, which exec puts there "
                     "when it starts the command again (as in --resume-arg '--resume "
                     "{checkpoint}'; without --resume-arg the script reads "
                     "REPRO_AUDIT_RESUME_FROM; docs/resume.md, \"PyTorch\")");
  }
  return words;
}

std::vector<std::string> resume_words(const std::vector<std::string>& words,
                                      const std::string& checkpoint) {
  static const std::string kPlaceholder = "{checkpoint}";
  std::vector<std::string> out;
  for (std::string word : words) {
    for (std::size_t at = word.find(kPlaceholder); at != std::string::npos;
         at = word.find(kPlaceholder, at + checkpoint.size())) {
      word.replace(at, kPlaceholder.size(), checkpoint);
    }
    out.push_back(std::move(word));
  }
  return out;
}

}  // namespace ra::rundir
