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

}  // namespace

std::string unexpected_arguments_message(const CLI::App& app,
                                         const std::vector<std::string>& extras) {
  const CLI::App& command = chosen(app);
  std::vector<std::string> names = option_names(command);
  for (const std::string& n : option_names(app)) names.push_back(n);
  const std::string where = &command == &app ? "repro-audit" : "`" + command.get_name() + "`";
  std::string out;
  bool after_unknown_option = false;  // its value follows it: said with it, not apart
  for (const std::string& extra : extras) {
    const std::string name = extra.substr(0, extra.find('='));
    // "-3" is a value (a negative number), not an option.
    const bool option = name.starts_with("-") && name.size() > 1 && !std::isdigit(name[1]);
    if (!option) {
      if (!after_unknown_option) {
        out += "unexpected argument '" + printable(extra) + "' for " + where + "\n";
      }
      after_unknown_option = false;
      continue;
    }
    after_unknown_option = true;
    std::string best;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (const std::string& candidate : names) {
      const std::size_t d = edit_distance(name, candidate);
      if (d < best_distance) best = candidate, best_distance = d;
    }
    out += printable(name) + ": no such option of " + where;
    // Close: a typo or two, or a prefix ("--run" of "--runs").
    if (!best.empty() && (best_distance <= 2 || best.starts_with(name))) {
      out += "; did you mean " + best + "?";
    }
    out += "\n";
  }
  return out;
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
