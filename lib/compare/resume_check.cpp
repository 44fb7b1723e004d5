#include "compare/resume_check.h"

#include <algorithm>

#include "compare/compare.h"

namespace ra::compare {
namespace {

std::vector<ResumePiece> differing_pieces(const trace::ResumeState& reference,
                                          const trace::ResumeState& other) {
  std::vector<ResumePiece> out;
  if (other.weights != reference.weights) out.push_back({"weights", ""});
  // A piece the reference recorded and the resumed run did not (or recorded otherwise) differs.
  const auto optional_piece = [&](const char* name, const std::optional<Digest128>& ref,
                                  const std::optional<Digest128>& got) {
    if (ref && ref != got) out.push_back({name, ""});
  };
  optional_piece("buffers", reference.buffers, other.buffers);
  if (other.optimizer_state != reference.optimizer_state) out.push_back({"optimizer_state", ""});
  if (other.schedule != reference.schedule) out.push_back({"schedule", ""});
  optional_piece("lr_scheduler", reference.lr_scheduler, other.lr_scheduler);
  optional_piece("grad_scaler", reference.grad_scaler, other.grad_scaler);
  for (const auto& stream : reference.rng_streams) {
    const auto it = std::find_if(other.rng_streams.begin(), other.rng_streams.end(),
                                 [&](const auto& s) { return s.first == stream.first; });
    if (it == other.rng_streams.end() || it->second != stream.second) {
      out.push_back({"rng_stream", stream.first});
    }
  }
  if (other.next_batch != reference.next_batch) out.push_back({"next_batch", ""});
  return out;
}

const trace::ResumePoint* passed_point(const trace::Trace& reference, std::int64_t step) {
  for (const trace::ResumePoint& p : reference.resume_points) {
    if (p.step == step && !p.resumed) return &p;
  }
  return nullptr;
}

}  // namespace

std::vector<ResumeVerdict> check_resumes(const std::vector<trace::Trace>& traces,
                                         const std::vector<Divergence>& divergences) {
  std::vector<ResumeVerdict> out;
  if (traces.empty()) return out;
  const trace::TraceHeader& reference = traces[0].header;
  for (std::size_t i = 1; i < traces.size(); ++i) {
    // Only a run of the reference's seeds can be expected to be the reference resumed.
    const trace::TraceHeader& h = traces[i].header;
    if (h.seed_init != reference.seed_init || h.seed_data != reference.seed_data ||
        h.seed_dropout != reference.seed_dropout || h.seed_augment != reference.seed_augment ||
        h.perturbation.has_value() || h.seed_group != reference.seed_group) {
      continue;
    }
    for (const trace::ResumePoint& p : traces[i].resume_points) {
      if (!p.resumed) continue;
      ResumeVerdict v;
      v.run = static_cast<int>(i);
      v.step = p.step;
      v.interrupt_at = p.interrupt_at;
      v.script_checkpoint = reference.backend.starts_with("pytorch");
      v.checkpoint_bytes = p.checkpoint_bytes;
      v.write_seconds = p.write_seconds;
      v.read_seconds = p.read_seconds;
      if (const trace::ResumePoint* passed = passed_point(traces[0], p.step)) {
        v.differing = differing_pieces(passed->state, p.state);
      } else {
        v.compared = false;
      }
      // The earliest divergence of this run at or after the resume (an initial-weights
      // difference has no step: it is before any resume).
      for (const Divergence& d : divergences) {
        if (!d.step || *d.step < p.step) continue;
        if (std::find(d.runs_differing.begin(), d.runs_differing.end(), v.run) ==
            d.runs_differing.end()) {
          continue;
        }
        if (!v.first_divergence_step || *d.step < *v.first_divergence_step) {
          v.first_divergence_step = d.step;
          v.first_divergence_category = to_string(d.category);
          v.first_divergence_tensor = d.tensor;
        }
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace ra::compare
