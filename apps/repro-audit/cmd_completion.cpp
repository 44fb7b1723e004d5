// `repro-audit completion bash|zsh|fish`: a shell completion script, made from the subcommands and
// options the program has (so it never lags behind them). Install, e.g.:
//   repro-audit completion bash > /etc/bash_completion.d/repro-audit
//   repro-audit completion zsh > "${fpath[1]}/_repro-audit"
//   repro-audit completion fish > ~/.config/fish/completions/repro-audit.fish
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"

namespace ra::app {
namespace {

struct Command {
  std::string name, description;
  std::vector<std::string> options;  // "--runs", "-q", ...
};

std::vector<Command> commands_of(CLI::App& app) {
  std::vector<Command> out;
  for (CLI::App* sub : app.get_subcommands({})) {
    Command c{sub->get_name(), sub->get_description(), {}};
    for (const CLI::Option* o : sub->get_options()) {
      for (const std::string& n : o->get_lnames()) c.options.push_back("--" + n);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Descriptions go inside single quotes in the scripts.
std::string single_quoted(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out;
}

std::string bash_script(const std::vector<Command>& commands) {
  std::vector<std::string> names;
  std::string cases;
  for (const Command& c : commands) {
    names.push_back(c.name);
    cases += "    " + c.name + ") words=\"" + joined(c.options) + "\" ;;\n";
  }
  return "# bash completion for repro-audit (repro-audit completion bash)\n"
         "_repro_audit() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} command= i words\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in -*) ;; *) command=${COMP_WORDS[i]}; break ;; esac\n"
         "  done\n"
         "  if [ -z \"$command\" ]; then\n"
         "    COMPREPLY=($(compgen -W \"" +
         joined(names) +
         " --help --version -q -v\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  case $command in\n" +
         cases +
         "    *) words= ;;\n"
         "  esac\n"
         "  if [[ $cur == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$words --help -q -v\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -o filenames -F _repro_audit repro-audit\n";
}

std::string zsh_script(const std::vector<Command>& commands) {
  // zsh runs the bash script through bashcompinit: one definition of the words for both shells.
  return "#compdef repro-audit\n# zsh completion for repro-audit (repro-audit completion zsh)\n"
         "autoload -U +X bashcompinit && bashcompinit\n" +
         bash_script(commands);
}

std::string fish_script(const std::vector<Command>& commands) {
  std::string out = "# fish completion for repro-audit (repro-audit completion fish)\n";
  std::vector<std::string> names;
  for (const Command& c : commands) names.push_back(c.name);
  for (const Command& c : commands) {
    out += "complete -c repro-audit -n 'not __fish_seen_subcommand_from " + joined(names) +
           "' -a " + c.name + " -d '" + single_quoted(c.description) + "'\n";
    for (const std::string& o : c.options) {
      out += "complete -c repro-audit -n '__fish_seen_subcommand_from " + c.name + "' -l " +
             o.substr(2) + "\n";
    }
  }
  return out;
}

}  // namespace

void register_completion(CLI::App& app, CommandRun& run) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "completion", "Print a shell completion script (bash, zsh or fish) for repro-audit");
  cmd->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  cmd->callback([&app, &run, shell] {
    run = [&app, shell] {
      const std::vector<Command> commands = commands_of(app);
      const std::string script = *shell == "bash"  ? bash_script(commands)
                                 : *shell == "zsh" ? zsh_script(commands)
                                                   : fish_script(commands);
      std::fputs(script.c_str(), stdout);
      return std::fflush(stdout) == 0 ? 0 : 2;
    };
  });
}

}  // namespace ra::app
