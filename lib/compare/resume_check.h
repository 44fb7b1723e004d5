#pragma once
// The resume check (docs/resume.md): each resumed run's state just after its restore against the
// uninterrupted reference run's state at the same step, piece by piece, and the first divergence
// that follows. From the traces' resume records only (trace/resume_point.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace ra::compare {

struct Divergence;  // compare/compare.h

// One piece of a resume point's state: "weights", "optimizer_state", "schedule", "next_batch", or
// "rng_stream" with `stream` its name ("data/order", "dropout/dropout_0"); of a PyTorch script's
// checkpoint also "buffers", "lr_scheduler", "grad_scaler", and the streams "torch", "cuda",
// "numpy", "python_random".
struct ResumePiece {
  std::string piece;
  std::string stream;
  friend bool operator==(const ResumePiece&, const ResumePiece&) = default;
};

struct ResumeVerdict {
  int run = 0;            // index among the traces
  std::int64_t step = 0;  // resumed before this step (after `step` steps)
  // The --interrupt-at step the resume serves: `step`, or of a script that saves itself the step
  // S whose save point (the script's first save at or after S) is at `step`.
  std::int64_t interrupt_at = 0;
  // False when the reference run recorded no state at the step (its trace is of an audit without
  // this interrupt): then nothing is compared, and `differing` is empty.
  bool compared = true;
  // The script's own save and load (exec --interrupt-at), not the engine's checkpoint: the report
  // words each piece as the fix in the script.
  bool script_checkpoint = false;
  std::vector<ResumePiece> differing;  // empty: every recorded piece agreed at the save point
  // Every recorded piece agreed at the save point.
  bool restored() const { return compared && differing.empty(); }
  // The resumed run is the uninterrupted one from the save point on: every piece agreed there and
  // no later step parts (issue 61: pieces that agree at a save point taken before the script's
  // evaluation and scheduler step do not make the script's own resume exact).
  bool exact() const { return restored() && !first_divergence_step; }
  // The first difference of this run from the reference at or after `step` (none: it never
  // parted from the reference run after the resume).
  std::optional<std::int64_t> first_divergence_step;
  std::string first_divergence_category;  // "batches", "losses", ... (compare.h Category)
  std::string first_divergence_tensor;
  std::uint64_t checkpoint_bytes = 0;
  // None for a script's own save and load, which the recorder does not time.
  std::optional<double> write_seconds, read_seconds;
};

// Every resumed point of traces[1..] of traces[0]'s seeds and seed group against traces[0], the
// uninterrupted reference (runs of other seeds, and perturbed runs, whose initial weights differ
// by design, are not its resumption and get no verdict); with the
// comparison's divergences (category firsts, overall first) for the divergence that follows.
std::vector<ResumeVerdict> check_resumes(const std::vector<trace::Trace>& traces,
                                         const std::vector<Divergence>& divergences);

}  // namespace ra::compare
