// The resume section (report/sections.h): the resume finding (compare/resume_finding.cpp) in
// every form. In words (docs/resume.md, docs/report.md "Resume"): each resumed run's restore,
// exact or with every piece of state it left out named as what to fix, and where the run first
// parted from the uninterrupted one afterwards; the checkpoint's cost. The HTML page shows those
// words; JUnit has a case per resume; the JSON report's "resumes" holds each verdict.
#include <algorithm>
#include <cstdio>

#include "compare/finding_facts.h"
#include "report/markup.h"
#include "report/sections.h"
#include "report/svg_plot.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {
namespace {

using compare::ResumePiece;
using compare::ResumeVerdict;

bool stream_differs(const ResumeVerdict& v, const std::string& stream) {
  for (const ResumePiece& p : v.differing) {
    if (p.piece == "rng_stream" && p.stream == stream) return true;
  }
  return false;
}

// A piece a PyTorch script's save or load left out (exec --interrupt-at), worded as the fix in
// the script: what differs after the resume, and the call that saves and restores it.
std::string script_piece_words(const ResumePiece& p, const ResumeVerdict& v) {
  const std::string after = " after step " + std::to_string(v.step);
  if (p.piece == "weights") {
    return "the parameters were not restored: the run went on from other weights than it stopped "
           "with; save model.state_dict() and load it with model.load_state_dict()";
  }
  if (p.piece == "buffers") {
    return "the model's buffers (BatchNorm's running statistics) were not restored: the "
           "normalisation" +
           after + " differs; save model.state_dict(), which holds them, not only the parameters";
  }
  if (p.piece == "optimizer_state") {
    return "the optimizer's state (momentum, moving averages, step counts) was not restored: the "
           "updates" +
           after + " differ; save optimizer.state_dict() and load it";
  }
  if (p.piece == "schedule") {
    return "the optimizer's learning rate (its param_groups) was not restored: the updates" +
           after + " use another; load optimizer.state_dict(), which holds them";
  }
  if (p.piece == "lr_scheduler") {
    return "the LR scheduler was not restored: its position, so the learning rate" + after +
           ", differs; save scheduler.state_dict() and load it (saved after scheduler.step(): "
           "a save before it holds the schedule a step behind)";
  }
  if (p.piece == "grad_scaler") {
    return "the GradScaler was not restored: its loss scale" + after +
           " differs; save scaler.state_dict() and load it";
  }
  if (p.piece == "rng_stream" && p.stream == "torch") {
    return "torch's RNG state was not restored: the dropout masks (and every other draw of "
           "torch's generator, a shuffling DataLoader's order included)" +
           after +
           " differ; save torch.get_rng_state() and restore it with torch.set_rng_state() (save "
           "after an evaluation that draws)";
  }
  if (p.piece == "rng_stream" && p.stream == "cuda") {
    return "CUDA's RNG state was not restored: what the GPU draws (dropout on the GPU)" + after +
           " differs; save torch.cuda.get_rng_state_all() and restore it with "
           "torch.cuda.set_rng_state_all()";
  }
  if (p.piece == "rng_stream" && p.stream == "numpy") {
    return "numpy's global RNG state was not restored: what it draws (augmentations)" + after +
           " differs; save numpy.random.get_state() and restore it with numpy.random.set_state()";
  }
  if (p.piece == "rng_stream" && p.stream == "python_random") {
    return "Python's `random` state was not restored: what it draws" + after +
           " differs; save random.getstate() and restore it with random.setstate()";
  }
  if (p.piece == "rng_stream") {
    return "the random state '" + p.stream + "' was not restored: what it draws" + after +
           " differs; save it and restore it";
  }
  // Only what the evidence shows (issue 61: "started again from the beginning" was said where the
  // sampler had drawn another order): whether torch's generator, which a sampler without one of
  // its own draws each epoch's order from, agreed.
  const std::string first = "the first batch after the resume is not the uninterrupted run's: ";
  if (stream_differs(v, "torch")) {
    return first +
           "torch's RNG state above differs, and a RandomSampler without a generator of its own "
           "draws each epoch's order from it as its iterator starts; restore it before that, and "
           "resume the loader's position (a resumable sampler)";
  }
  const bool streams_differ =
      std::any_of(v.differing.begin(), v.differing.end(),
                  [](const ResumePiece& d) { return d.piece == "rng_stream"; });
  return first +
         "torch's RNG state agreed, so the loader's position or a generator of its own "
         "(DataLoader(generator=...), a sampler's) is not where the uninterrupted run's was; a "
         "resumable sampler saves and restores both" +
         std::string(streams_differ ? " (or an augmentation drew from an RNG state above)" : "");
}

// What a piece left out means for the steps after `step`, and the fix.
std::string piece_words(const ResumePiece& p, const ResumeVerdict& v) {
  if (v.script_checkpoint) return script_piece_words(p, v);
  const std::string after = "after step " + std::to_string(v.step);
  if (p.piece == "weights") {
    return "the weights were not restored: the run went on from other weights than it stopped "
           "with; save and load every parameter and buffer";
  }
  if (p.piece == "optimizer_state") {
    return "the optimizer's state (momentum, moving averages) was not restored: the updates " +
           after + " differ; save the optimizer's state_dict and load it";
  }
  if (p.piece == "schedule") {
    return "the learning-rate schedule was not restored: the optimizer's step count started "
           "again, so the learning rate " +
           after + " differs; save the step count (or the scheduler's state_dict)";
  }
  if (p.piece == "rng_stream" && p.stream == "data/order") {
    return "the data order's random stream was not restored: the batches " + after +
           " come in another order; save the stream's state (or the epoch's permutation)";
  }
  if (p.piece == "rng_stream" && p.stream.starts_with("dropout/")) {
    return "the random stream '" + p.stream + "' was not restored: the dropout masks " + after +
           " differ; save the stream's state (its counter) and restore it";
  }
  if (p.piece == "rng_stream") {
    return "the random stream '" + p.stream + "' was not restored: what it draws " + after +
           " differs; save its state and restore it";
  }
  if (stream_differs(v, "data/order")) {
    return "the next batch differs (the data order's stream above)";
  }
  return "the data order's position was not restored: the sampler started again from the "
         "epoch's first batch; save how many batches of the epoch were taken, or use a resumable "
         "sampler";
}

std::string cost_words(const ResumeVerdict& v) {
  const std::string size = "checkpoint " + byte_size(v.checkpoint_bytes);
  if (!v.write_seconds || !v.read_seconds) return size + ", the script's own save and load";
  return size + format(v.script_checkpoint ? ", the script's save took %.2f ms, its load %.2f ms"
                                           : ", written in %.2f ms, read in %.2f ms",
                       *v.write_seconds * 1e3, *v.read_seconds * 1e3);
}

// Every recorded piece agreed at the save point and the run parted all the same: what the first
// difference's signature says. At the first step after the resume it is work done between the save
// point and that step (pytorch/examples' mnist saves before its evaluation, whose DataLoader
// draws from torch's generator, and before its scheduler.step()); later, no restore explains it.
std::string parted_after_restore(const ResumeVerdict& v) {
  const std::string& category = v.first_divergence_category;
  if (*v.first_divergence_step != v.step) {
    return "  every recorded piece agreed at the save point and " +
           std::to_string(*v.first_divergence_step - v.step) +
           " steps after it agreed too: not the restore's doing (a nondeterministic op, or state "
           "the recorder does not see)\n";
  }
  std::string out =
      "  every recorded piece agreed at the save point, yet the first step after it "
      "differs: ";
  if (category == "batches") {
    return out +
           "its batch. A random generator was drawn between the save point and the next step "
           "(work the script does after it saves: an evaluation whose DataLoader shuffles or "
           "draws), or the loader's position is not the recorded one; save where the next step "
           "starts from\n";
  }
  if (category == "weights" || category == "optimizer_state") {
    return out + "the same batch, loss and gradients gave other " +
           (category == "weights" ? std::string("weights") : std::string("optimizer state")) +
           ": the learning rate (or another hyperparameter) differs, changed after the save point "
           "(a scheduler.step() after the save) or not restored\n";
  }
  return out + "the same batch gave another " + category +
         ": a random draw in the step (dropout) differs, so a generator was drawn between the "
         "save point and the next step (work the script does after it saves)\n";
}

}  // namespace

std::string resume(const ComparisonResult& r, const ResumeVerdict& v) {
  const auto index = static_cast<std::size_t>(v.run);
  const int run = index < r.runs.size() ? r.runs[index].run : v.run;
  std::string out = "resume of run " + std::to_string(run) + " at step " + std::to_string(v.step);
  if (v.interrupt_at != 0 && v.interrupt_at != v.step) {
    out += " (the script's first save at or after --interrupt-at " +
           std::to_string(v.interrupt_at) + ")";
  }
  out += ": ";
  if (!v.compared) {
    return out + "not checked: run 0 recorded no state at that step (" + cost_words(v) + ")\n";
  }
  out += (v.exact() ? "exact" : "NOT exact") + std::string(" (") + cost_words(v) + ")\n";
  // Wrapped, never cut: the fix is at the end of each piece's words.
  for (const ResumePiece& p : v.differing) {
    out += wrapped("  - " + piece_words(p, v), kMaxLineLength, "    ");
  }
  if (v.first_divergence_step) {
    out += "  first divergence after the resume: step " + std::to_string(*v.first_divergence_step) +
           ", " + v.first_divergence_category +
           (v.first_divergence_tensor.empty() ? "" : " (" + v.first_divergence_tensor + ")") + "\n";
    if (v.restored()) out += parted_after_restore(v);
  } else if (!v.exact()) {
    out += "  the run did not part from run 0 after the resume\n";
  }
  return out;
}

std::string resumes(const ComparisonResult& r) {
  std::string out;
  for (const ResumeVerdict& v : compare::resumes_of(r)) out += resume(r, v);
  return out;
}

}  // namespace ra::report::text

namespace ra::report {
namespace {

using nlohmann::json;

json resume_verdict_json(const compare::ComparisonResult& r, const compare::ResumeVerdict& v) {
  json pieces = json::array();
  for (const compare::ResumePiece& p : v.differing) {
    pieces.push_back(p.stream.empty() ? json{{"piece", p.piece}}
                                      : json{{"piece", p.piece}, {"stream", p.stream}});
  }
  json first = nullptr;
  if (v.first_divergence_step) {
    first = {{"step", *v.first_divergence_step},
             {"category", v.first_divergence_category},
             {"tensor", v.first_divergence_tensor}};
  }
  const auto index = static_cast<std::size_t>(v.run);
  const auto seconds = [](const std::optional<double>& s) { return s ? json(*s) : json(nullptr); };
  return {{"run", index < r.runs.size() ? r.runs[index].run : v.run},
          {"step", v.step},
          {"interrupt_at", v.interrupt_at},
          {"compared", v.compared},
          {"exact", v.exact()},
          {"restored", v.restored()},
          {"differing", pieces},
          {"first_divergence", first},
          {"checkpoint",
           {{"by", v.script_checkpoint ? "script" : "engine"},
            {"bytes", v.checkpoint_bytes},
            {"write_seconds", seconds(v.write_seconds)},
            {"read_seconds", seconds(v.read_seconds)}}}};
}

}  // namespace

std::string resume_text(const compare::ComparisonResult& r, const compare::Finding&) {
  return text::resumes(r);
}

// In the text report's words: the pieces a checkpoint left out, each worded as the fix.
std::string resume_html(const compare::ComparisonResult& r, const compare::Finding&) {
  if (compare::resumes_of(r).empty()) return "";
  return "<h2>Resumes</h2>\n<pre>" +
         svg::html_lines_escaped(text::cut_long_lines(text::resumes(r))) + "</pre>\n";
}

// A case per resumed run: fails where identity was expected and a piece of state was not
// restored; its time the checkpoint's write and read.
std::vector<JunitCase> resume_cases(const compare::ComparisonResult& r, const compare::Finding& f) {
  std::vector<JunitCase> cases;
  const std::vector<compare::ResumeVerdict>& resumes = compare::resumes_of(r);
  for (std::size_t i = 0; i < resumes.size() && i < f.parts.size(); ++i) {
    const compare::ResumeVerdict& v = resumes[i];
    JunitCase c;
    const std::string words = text::resume(r, v);
    const std::string head = text::first_line(words);
    c.name = head.substr(0, head.find(':'));
    c.time = v.write_seconds.value_or(0.0) + v.read_seconds.value_or(0.0);
    c.message = head.substr(head.find(": ") + 2);
    switch (f.parts[i].outcome) {
      case compare::CheckOutcome::skipped:
        c.outcome = JunitCase::Outcome::skipped;
        break;
      case compare::CheckOutcome::failed:
      case compare::CheckOutcome::inconclusive:  // a resume has no control: never inconclusive
        c.outcome = JunitCase::Outcome::failed;
        c.failure_type = "resume";
        c.detail = text::after_first_line(words);
        break;
      case compare::CheckOutcome::allowed:
        c.message += " (allowed: bitwise identity was not expected)";
        break;
      case compare::CheckOutcome::passed:
        break;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// Only for resumed runs (--interrupt-at), so that other reports read as before.
void resume_json(const compare::ComparisonResult& r, const compare::Finding&, json& report) {
  const std::vector<compare::ResumeVerdict>& resumes = compare::resumes_of(r);
  if (resumes.empty()) return;
  json out = json::array();
  for (const compare::ResumeVerdict& v : resumes) out.push_back(resume_verdict_json(r, v));
  report["resumes"] = out;
}

}  // namespace ra::report
