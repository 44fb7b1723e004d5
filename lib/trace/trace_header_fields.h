#pragma once
// Checked reading of the fields of a trace record that stand on their own (docs/trace-format.md
// "What the reader checks"): the format version, the op window, the determinism policy, the
// algorithm ledger, the parameter and buffer lists, the fault, and the end record's status. Each
// throws InputError naming the file, the line and the field (trace/trace_fields.h); the reader
// (trace_read.cpp) checks the records against each other.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"
#include "trace/trace_fields.h"

namespace ra::trace {

// 1, 2 or 3: exactly a JSON integer the tool reads.
int read_format_version(const Field& version);
// {"first", "last"}: last null or greater than first.
OpWindow read_op_window(const Field& w);
// Version 4's tensor_digests: {"every": K >= 1 or null, "windows": [op windows]}, not every step.
TensorDigestPlan read_tensor_digest_plan(const Field& p);
// deterministic, nondeterministic, autotune or batch_invariant.
void read_kernel_mode(const Field& mode);
// {"mode", "ops": {reducing op: mode}}.
nlohmann::json read_determinism(const Field& d);
nlohmann::json read_ledger(const Field& l);
// The header's params or buffers (`what`: "parameter", "buffer"): {name, shape} of f32 tensors of
// rank >= 1 in versions 1 and 2; {name, shape, dtype} in version 3, any rank and dimension.
std::vector<TensorInfo> read_tensor_list(const Field& list, bool v3, const char* what);
// One of kTraceDTypes.
std::string read_dtype(const Field& f);
// A fault of run `run_index`.
nlohmann::json read_fault(const Field& f, int run_index);
// The header's perturbation (the perturbed group): after_bits must be before_bits with `bit`
// flipped and nothing else.
Perturbation read_perturbation(const Field& f);
// The end record's predictions: `file` a relative path without "..", `samples` and `digest`.
PredictionsRecord read_predictions(const Field& f);
// The end record's `recording_cost`: the calibrated median > 0, at least one calibration step.
RecordingCost read_recording_cost(const Field& f);
// The end record's step_launch: counts, and eager reasons whose counts add up to `eager`.
StepLaunchRecord read_step_launch(const Field& f);
// The PyTorch recorder's optional header fields: rng_states and seeded (digests of random
// states: an object of hex digests or lists of them; seeded with its seed), recorder_warnings (a
// list of non-empty strings).
void read_recorder_fields(const Field& header, TraceHeader& h);
// Version 3's end record: status, and error exactly when failed.
void read_end_status(const Field& r, FinalRecord& f);

}  // namespace ra::trace
