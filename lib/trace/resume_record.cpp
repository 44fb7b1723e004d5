#include "trace/resume_record.h"

#include <nlohmann/json.hpp>

namespace ra::trace {

std::string resume_line(const ResumePoint& p) {
  nlohmann::json streams = nlohmann::json::object();
  for (const auto& [name, d] : p.state.rng_streams) streams[name] = d.hex();
  nlohmann::json rec{{"record", "resume"},
                     {"step", p.step},
                     {"resumed", p.resumed},
                     {"state",
                      {{"weights", p.state.weights.hex()},
                       {"optimizer_state", p.state.optimizer_state.hex()},
                       {"schedule", p.state.schedule.hex()},
                       {"rng_streams", streams},
                       {"next_batch", p.state.next_batch.hex()}}}};
  const auto optional_piece = [&](const char* name, const std::optional<Digest128>& d) {
    if (d) rec["state"][name] = d->hex();
  };
  optional_piece("buffers", p.state.buffers);
  optional_piece("lr_scheduler", p.state.lr_scheduler);
  optional_piece("grad_scaler", p.state.grad_scaler);
  if (p.interrupt_at != 0 && p.interrupt_at != p.step) rec["interrupt_at"] = p.interrupt_at;
  if (p.resumed) {
    rec["checkpoint"] = {{"bytes", p.checkpoint_bytes}};
    if (p.write_seconds) rec["checkpoint"]["write_seconds"] = *p.write_seconds;
    if (p.read_seconds) rec["checkpoint"]["read_seconds"] = *p.read_seconds;
  }
  return rec.dump() + "\n";
}

ResumePoint records::read_resume(const Field& r) {
  ResumePoint p;
  p.step = r["step"].count();
  p.interrupt_at = p.step;
  if (r.has("interrupt_at")) {
    p.interrupt_at = r["interrupt_at"].count();
    if (p.interrupt_at < 1 || p.interrupt_at > p.step) {
      r["interrupt_at"].fail("the --interrupt-at step this point serves: 1 to the record's step");
    }
  }
  p.resumed = r["resumed"].boolean();
  const Field s = r["state"];
  p.state.weights = s["weights"].digest();
  p.state.optimizer_state = s["optimizer_state"].digest();
  p.state.schedule = s["schedule"].digest();
  for (const auto& [name, d] : s["rng_streams"].members()) {
    p.state.rng_streams.emplace_back(name, d.digest());
  }
  p.state.next_batch = s["next_batch"].digest();
  if (s.has("buffers")) p.state.buffers = s["buffers"].digest();
  if (s.has("lr_scheduler")) p.state.lr_scheduler = s["lr_scheduler"].digest();
  if (s.has("grad_scaler")) p.state.grad_scaler = s["grad_scaler"].digest();
  if (p.resumed) {
    const Field c = r["checkpoint"];
    p.checkpoint_bytes = c["bytes"].uint64();
    if (c.has("write_seconds")) p.write_seconds = c["write_seconds"].nonnegative_number();
    if (c.has("read_seconds")) p.read_seconds = c["read_seconds"].nonnegative_number();
  } else if (r.has("checkpoint")) {
    r["checkpoint"].fail("only a resumed run's resume record has a checkpoint");
  }
  return p;
}

}  // namespace ra::trace
