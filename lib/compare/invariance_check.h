#pragma once
// Batch invariance (docs/invariance.md): does the anchor sample's output depend on the batch it
// sits in? Each probe of a sweep (trace/invariance.h) is compared with the anchor alone; where
// its output differs, the op walk names the first op whose anchor-row inputs were bitwise equal
// to the reference's and whose anchor-row output was not. The control probe (a one-ULP change at
// one op) must be seen, or an "invariant" is not proven.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "compare/statistics.h"
#include "trace/invariance.h"

namespace ra::compare {

// Where a probe's forward pass first parts from the anchor-alone pass.
struct FirstBreak {
  int op_index = 0;
  std::string op, module;
  // true: the op's anchor-row inputs equal the reference's and its output row does not: the op
  // itself made the anchor's result depend on the batch. false: the op sequence itself differs
  // there (another kernel path for this batch size: `op` is the reference's, `probe_op` the
  // probe's).
  bool output_differs = true;
  std::string probe_op;
};

struct ProbeOutcome {
  trace::ProbeConfig config;
  bool equal = true;  // the anchor's output row bitwise equal to the anchor alone's
  // How far the anchor's output row is from the anchor alone's (compare/statistics.h), where the
  // producer kept the values and the output differs.
  std::optional<TensorDifference> difference;
  std::optional<FirstBreak> first_break;  // where the pass parts (also for an equal output)
};

struct ControlOutcome {
  trace::InvarianceControl op;
  trace::ProbeConfig config;
  bool ran = false;       // a control probe is in the sweep
  bool detected = false;  // its op's anchor row differs from the same batch's without the change
  bool reached_output = false;  // and the change reached the anchor's output
};

// How often each op of the reference was where a probe first parted (the per-op table).
struct OpBreaks {
  int op_index = 0;
  std::string op, module;
  int probes = 0;
};

struct InvarianceAnalysis {
  std::string source, model, mode, device, dtype;
  int reference_ops = 0;
  std::vector<ProbeOutcome> probes;  // every probe but the control, in sweep order
  ControlOutcome control;
  bool invariant = true;  // every probe's anchor output equal to the anchor alone's
  // The first failing probe: the smallest batch size, then sweep order.
  std::optional<std::size_t> first_failing;
  std::vector<OpBreaks> breaking_ops;  // most probes first
};

InvarianceAnalysis analyse_invariance(const trace::InvarianceSweep& sweep);

}  // namespace ra::compare
