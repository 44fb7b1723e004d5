#include "trace_options.h"

namespace ra::app {

void add_tensor_digests_option(CLI::App& cmd, std::vector<std::string>& values) {
  cmd.add_option("--tensor-digests", values,
                 "Record a digest per tensor (each gradient, weight and buffer) only at these "
                 "steps, one digest per category at the others: every:K (steps 0, K, 2K...), a "
                 "window A:B, A: or N, all (the default) or none; repeat or separate by commas "
                 "(exec: REPRO_AUDIT_TENSOR_DIGESTS for the recorder). A long run's trace "
                 "shrinks about 30-fold (format version 4; docs/trace-format.md, \"Levels of "
                 "detail\")")
      ->delimiter(',')
      // One plan per occurrence (commas inside it): without this, a value list runs on, and in
      // `exec --tensor-digests every:2 -- CMD` it took the "--" and the command's options.
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

}  // namespace ra::app
