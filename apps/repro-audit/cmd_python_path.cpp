// `repro-audit python-path`: the folder that holds the recorder package `repro_audit` (lib/python
// of the source tree this binary was built from), for PYTHONPATH. The install line that needs
// neither pip nor a network, on Debian 12 too, where a plain `pip install` is refused (PEP 668):
//   export PYTHONPATH=$(repro-audit python-path)
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "commands.h"
#include "core/error.h"

namespace ra::app {
namespace {

int run_python_path() {
  const std::filesystem::path folder = REPRO_AUDIT_PYTHON_DIR;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(folder / "repro_audit" / "__init__.py", ec)) {
    throw RuntimeFailure("the recorder package is not in " + folder.string() +
                         " (the source tree this binary was built from); in a checkout: "
                         "pip install --no-build-isolation ./lib/python (docs/pytorch.md)");
  }
  std::printf("%s\n", folder.string().c_str());
  return 0;
}

}  // namespace

void register_python_path(CLI::App& app, CommandRun& run) {
  CLI::App* cmd = app.add_subcommand(
      "python-path",
      "Print the folder that holds the recorder package repro_audit, for PYTHONPATH: "
      "export PYTHONPATH=$(repro-audit python-path)");
  cmd->callback([&run] { run = [] { return run_python_path(); }; });
}

}  // namespace ra::app
