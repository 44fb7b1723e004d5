#pragma once
// The state digests of a resume point (trace/resume_point.h, docs/resume.md), taken before the
// point's step on both sides: the uninterrupted run as it passes each interrupt step, the resumed
// run at its first step after the restore. Both sides take them with the same code, here.
#include <cstdint>
#include <optional>
#include <vector>

#include "record/recorder.h"
#include "trace/resume_point.h"
#include "train/trainer.h"

namespace ra::record {

// Digests of the state `trainer` starts its next step from, with `next` its batch.
trace::ResumeState resume_state(const train::Trainer& trainer, const data::Batch& next);

class ResumeStateRecorder final : public train::Observer {
 public:
  // Records into `recorder`'s trace a resume point before each step of `pass_steps` (the
  // uninterrupted run's side).
  ResumeStateRecorder(Recorder& recorder, std::vector<std::int64_t> pass_steps);

  // The resumed side: the next run's first step is a resume point, with the checkpoint's cost.
  void expect_resume(std::int64_t step, std::uint64_t bytes, double write_seconds,
                     double read_seconds);

  void on_start(const train::Trainer& trainer) override { trainer_ = &trainer; }
  void before_step(data::Batch& batch, std::int64_t step) override;

 private:
  Recorder& recorder_;
  std::vector<std::int64_t> pass_steps_;
  std::optional<trace::ResumePoint> resume_;  // set by expect_resume until its step is recorded
  const train::Trainer* trainer_ = nullptr;
};

}  // namespace ra::record
