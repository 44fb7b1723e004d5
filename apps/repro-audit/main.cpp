// repro-audit: the one place where errors become exit codes (README "Exit codes").
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <exception>
#include <new>

#include "cli_help.h"
#include "commands.h"
#include "core/error.h"
#include "core/printable.h"
#include "printable_log.h"

namespace {

void setup_logging(int verbosity, bool quiet) {
  // Logs and progress go to stderr so stdout carries results only.
  auto logger = spdlog::stderr_color_mt("repro-audit");
  // Messages carry names, paths and keys from specs and traces: escaped (printable_log.h).
  logger->set_formatter(ra::app::make_printable_formatter("%^[%l]%$ %v"));
  logger->set_level(quiet ? spdlog::level::warn
                          : (verbosity > 0 ? spdlog::level::debug : spdlog::level::info));
  spdlog::set_default_logger(logger);
}

}  // namespace

namespace ra::app {
namespace {
std::vector<std::string>& arguments() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

const std::vector<std::string>& command_arguments() {
  return arguments();
}
void set_command_arguments(std::vector<std::string> args) {
  arguments() = std::move(args);
}
}  // namespace ra::app

// A command line CLI11 refused: what was wrong and what was probably meant (cli_help.h), exit 2.
int usage_error(CLI::App& app, const CLI::ParseError& e) {
  std::string message;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    std::vector<std::string> extras = app.remaining();
    for (const CLI::App* sub : app.get_subcommands()) {
      for (const std::string& r : sub->remaining()) extras.push_back(r);
    }
    message = ra::app::unexpected_arguments_message(app, extras, ra::app::command_arguments());
  } else {
    message = ra::app::unknown_subcommand_message(app);
  }
  if (message.empty()) {
    app.exit(e);
  } else {
    std::fputs((message + "Run with --help for more information.\n").c_str(), stderr);
  }
  return static_cast<int>(ra::ExitCode::bad_input);
}

// "repro-audit 0.1.0 (commit 1a2b3c4d5e6f, CUDA yes)": what a bug report needs to name.
std::string version_line() {
#ifdef RA_HAVE_CUDA
  const char* cuda = "yes";
#else
  const char* cuda = "no";
#endif
  return std::string("repro-audit ") + REPRO_AUDIT_VERSION + " (commit " + REPRO_AUDIT_COMMIT +
         ", CUDA " + cuda + ")";
}

int main(int argc, char** argv) {
  ra::app::set_command_arguments(std::vector<std::string>(argv + 1, argv + argc));
  // A reader of stdout that goes away (`| head -1`) must not kill the process mid-report: writes
  // then fail with EPIPE, which the report output handles (report_output.cpp), files written.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"repro-audit: measures the reproducibility of neural-network training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_line());
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More log detail on stderr");
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors on stderr");
  // Usage errors repeat the offending argument: escaped like everything else printed
  // (core/printable.h). Set before the subcommands are added, which inherit it.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return ra::printable(e.what()) + "\nRun with --help for more information.\n";
  });

  ra::app::CommandRun run;
  ra::app::register_run(app, run);
  ra::app::register_compare(app, run);
  ra::app::register_train(app, run);
  ra::app::register_validate(app, run);
  ra::app::register_env(app, run);
  ra::app::register_bench(app, run);
  ra::app::register_exec(app, run);
  ra::app::register_python_path(app, run);
  ra::app::register_doctor(app, run);
  ra::app::register_completion(app, run);
  // Global options after the subcommand too (`run spec.json -q`), and integers worded as such.
  for (CLI::App* sub : app.get_subcommands({})) sub->fallthrough();
  ra::app::check_integers_first(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e);
  }

  setup_logging(verbosity, quiet);
  try {
    return run();
  } catch (const ra::ValidationError& e) {
    // One record per problem: the log escapes line breaks inside a record (printable_log.h).
    const std::size_t n = e.problems().size();
    spdlog::error("{} {} found:", n, n == 1 ? "problem" : "problems");
    for (const ra::Problem& p : e.problems()) {
      spdlog::error("  {}: {}", p.path.empty() ? "(document)" : p.path, p.message);
    }
    return static_cast<int>(ra::ExitCode::bad_input);
  } catch (const ra::InputError& e) {
    spdlog::error("{}", e.what());
    return static_cast<int>(ra::ExitCode::bad_input);
  } catch (const ra::RuntimeFailure& e) {
    spdlog::error("{}", e.what());
    return static_cast<int>(ra::ExitCode::runtime);
  } catch (const std::bad_alloc&) {
    spdlog::error("out of memory");
    return static_cast<int>(ra::ExitCode::runtime);
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return static_cast<int>(ra::ExitCode::runtime);
  }
}
