#include "cli_help.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "core/printable.h"

namespace ra::app {
namespace {

// Levenshtein distance: how many edits turn one name into the other.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The long and short names of an app's options ("--runs", "-q").
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  return names;
}

// The subcommand the user chose, or the program itself.
const CLI::App& chosen(const CLI::App& app) {
  const auto chosen = const_cast<CLI::App&>(app).get_subcommands();
  return chosen.empty() ? app : *chosen.front();
}

// The closest of `names` to `word` when it is close (a typo or two, or a prefix: "--run" of
// "--runs"), else "".
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string& candidate : names) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) best = candidate, best_distance = d;
  }
  return !best.empty() && (best_distance <= 2 || best.starts_with(word)) ? best : "";
}

bool looks_like_option(const std::string& word) {
  // "-3" is a value (a negative number), not an option.
  return word.starts_with("-") && word.size() > 1 && !std::isdigit(word[1]);
}

// Whether `name` is an option of the subcommand `command` that the command line gives before the
// subcommand's name (where it is the program's, and the program has none of that name).
bool given_before_subcommand(const std::string& name, const CLI::App& command,
                             const std::vector<std::string>& given) {
  const std::vector<std::string> own = option_names(command);
  if (std::find(own.begin(), own.end(), name) == own.end()) return false;
  const auto sub = std::find(given.begin(), given.end(), command.get_name());
  return std::any_of(given.begin(), sub, [&](const std::string& word) {
    return word.substr(0, word.find('=')) == name;
  });
}

// exec and doctor run a command of the user's: an option they do not know is most often the
// command's own, written where the tool's options go.
// With "--" given, only for an option close to none of the tool's (a typo gets its suggestion
// alone).
std::string command_after_separator_hint(const CLI::App& command,
                                         const std::vector<std::string>& given, bool unlike_any) {
  const std::string name = command.get_name();
  if (name != "exec" && name != "doctor") return "";
  const std::string usage = "repro-audit " + name + " [OPTIONS] -- python3 train.py [ITS OPTIONS]";
  if (std::find(given.begin(), given.end(), "--") == given.end()) {
    return "put the command after `--`: " + usage + "\n";
  }
  if (!unlike_any) return "";
  return "the command's own options go after `--`, with the command: " + usage + "\n";
}

}  // namespace

std::string unexpected_arguments_message(const CLI::App& app,
                                         const std::vector<std::string>& extras,
                                         const std::vector<std::string>& given) {
  const CLI::App& command = chosen(app);
  std::vector<std::string> names = option_names(command);
  for (const std::string& n : option_names(app)) names.push_back(n);
  const std::string where = &command == &app ? "repro-audit" : "`" + command.get_name() + "`";
  std::string out;
  // After an unknown option, the words that follow are its value or the rest of a command line
  // CLI11 could no longer place: naming them too would be a second, spurious error.
  bool unknown_option = false;
  bool unlike_any = false;  // an unknown option close to none of the tool's: the command's own?
  for (const std::string& extra : extras) {
    const std::string name = extra.substr(0, extra.find('='));
    if (!looks_like_option(name)) {
      if (!unknown_option)
        out += "unexpected argument '" + printable(extra) + "' for " + where + "\n";
      continue;
    }
    unknown_option = true;
    if (&command != &app && given_before_subcommand(name, command, given)) {
      // "repro-audit --runs 2 exec ...": the subcommand's option, placed before its name.
      out += printable(name) + ": an option of " + where + ", given before it: write it after " +
             where + " (repro-audit " + command.get_name() + " " + printable(name) + " ...)\n";
      continue;
    }
    out += printable(name) + ": no such option of " + where;
    if (const std::string best = closest(name, names); !best.empty()) {
      out += "; did you mean " + best + "?";
    } else {
      unlike_any = true;
    }
    out += "\n";
  }
  if (unknown_option) out += command_after_separator_hint(command, given, unlike_any);
  return out;
}

std::string unknown_subcommand_message(const CLI::App& app) {
  if (!const_cast<CLI::App&>(app).get_subcommands().empty()) return "";
  const std::vector<std::string> words = app.remaining();
  const auto word = std::find_if(words.begin(), words.end(),
                                 [](const std::string& w) { return !looks_like_option(w); });
  if (word == words.end()) return "";
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  std::string out = printable(*word) + ": no such subcommand of repro-audit";
  if (const std::string best = closest(*word, names); !best.empty()) {
    out += "; did you mean " + best + "?";
  }
  return out + "\n";
}

std::string exit_codes_text() {
  return "Exit codes (README, \"Exit codes\"):\n"
         "  0  runs reproducible, or differing only where --expect allows\n"
         "  1  divergence where bitwise equality was expected; with --expect equivalent, B "
         "beyond the floor\n"
         "  2  bad input or usage\n"
         "  3  runtime or device failure (exec: a run's command failed, timed out or wrote no "
         "whole trace)\n"
         "  4  incomplete audit: planned runs without a whole trace (compare DIR, shards)\n"
         "  5  nothing was compared (fewer than two same-seed runs); --allow-empty makes it 0\n"
         "  6  inconclusive: nothing differed, but the control that proves a difference would be "
         "seen was not (--invariance, a perturbed run's flip), or no floor was measured "
         "(--expect equivalent)\n";
}

namespace {

// A whole decimal number: digits, after a '-' only where the type is signed, within 64 bits.
CLI::Validator whole_number(bool is_unsigned) {
  return CLI::Validator(
      [is_unsigned](std::string& text) -> std::string {
        const std::size_t sign = !is_unsigned && text.starts_with("-") ? 1 : 0;
        const bool digits =
            text.size() > sign && text.find_first_not_of("0123456789", sign) == std::string::npos;
        errno = 0;
        if (digits && is_unsigned) (void)std::strtoull(text.c_str(), nullptr, 10);
        if (digits && !is_unsigned) (void)std::strtoll(text.c_str(), nullptr, 10);
        if (digits && errno != ERANGE) return {};
        const std::size_t any_sign = text.starts_with("-") ? 1 : 0;
        if (text.size() <= any_sign ||
            text.find_first_not_of("0123456789", any_sign) != std::string::npos) {
          return "expected a whole number, got '" + printable(text) + "'";
        }
        return std::string("expected an integer in ") +
               (is_unsigned ? "0..18446744073709551615"
                            : "-9223372036854775808..9223372036854775807") +
               ", got '" + printable(text) + "'";
      },
      "");
}

}  // namespace

void check_integers_first(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    // "INT", or "INT:INT in [1 - 10000]" once a range check describes itself.
    const std::string type = o->get_type_name();
    if (type.starts_with("INT") || type.starts_with("UINT")) {
      o->transform(whole_number(type.starts_with("UINT")));  // first, before any range check
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) check_integers_first(*sub);
}

}  // namespace ra::app
