#pragma once
// `repro-audit exec`: an audit of the user's own training command. The command is run once per
// planned run with the environment the PyTorch recorder (lib/python, docs/pytorch.md) reads:
//   REPRO_AUDIT_TRACE       the run's trace file (run-NNN.trace.jsonl in the audit folder)
//   REPRO_AUDIT_RUN         the run's number
//   REPRO_AUDIT_SEED        its seed: the same for the same-seed group, derived for the other
//   REPRO_AUDIT_SEED_GROUP  "same", "different" or "perturbed"
//   REPRO_AUDIT_PERTURB     in the perturbed group (--seeds all), the draw (the run's number)
//   REPRO_AUDIT_PERTURB_PLANNED  1 in every run of an audit with a perturbed group (--seeds all)
//                           that picks the initial weight whose lowest bit the recorder flips;
//                           empty otherwise
//   REPRO_AUDIT_ID          the audit's id (the traces carry it, as the engine's do)
//   REPRO_AUDIT_SPEC        the audit's spec, {"name", "source": "pytorch", "command"}: what the
//                           recorder writes as its header's spec, so a trace is known as the
//                           audit's own by its digest
//   REPRO_AUDIT_DEVICE_DIGEST_LIBRARY  the library that digests CUDA tensors on the GPU
//                           (kernels/digest_abi), when this build has one and the caller's
//                           environment names none
//   REPRO_AUDIT_INTERRUPT_AT  --interrupt-at's steps, "20,50" ("" for none): every run but run 0
//                           stops at each step's save point (the script's first save at or after
//                           it), run 0 records its state there
//   REPRO_AUDIT_CHECKPOINT_DIR  the run's checkpoint folder, run-NNN/checkpoints/, where the
//                           script saves and the recorder writes its files of an interrupt
//   REPRO_AUDIT_RESUME_FROM the script's file to resume from, and REPRO_AUDIT_RESUME_STATE the
//                           recorder's (checkpoint-step-S.recorder.json), set when the command is
//                           started again after an interrupt (with --resume-arg's words)
// The audit folder keeps run's rules (manifest, lock, --resume, --overwrite); the report is the
// same, from the traces. A run whose command fails, times out, is stopped by a signal exec passed
// on, or writes no whole trace (or a failed run's) is a RuntimeFailure (exit 3) naming it with its
// exit status and the last lines of its output; its trace, if any, is moved to
// run-NNN/failed.trace.jsonl, so nothing is compared as if it had run and --resume runs it again.
// Each run's output is kept in run-NNN/command.log, a bounded ring (core/log_ring.h). exec owns
// its runs (core/process.h): each in its own process group, SIGINT and SIGTERM passed on, no run
// left behind when exec ends.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "audit/audit_options.h"
#include "rundir/shard.h"

namespace ra::audit {

// The exit status of a run's process that the recorder ended after an interrupt's save
// (lib/python/repro_audit/checkpoint.py INTERRUPTED_EXIT): exec starts the command again to
// resume it. 75 is EX_TEMPFAIL of sysexits.h: "try again later".
inline constexpr int kInterruptedExit = 75;

// The op a root cause named, to keep whole: its step and its index among the step's op records.
struct KeptOp {
  std::int64_t step = 0;
  std::int64_t index = 0;
};

// "STEP:INDEX", two integers >= 0 (at most 18 digits each); InputError naming --keep-op otherwise.
KeptOp parse_kept_op(const std::string& text);

struct ExecOptions {
  std::vector<std::string> command;  // the program and its arguments (no shell)
  std::string name;                  // the audit's name: the report's and the default folder's
  int runs = 3;
  SeedPolicy seeds = SeedPolicy::same;
  std::uint64_t seed = 42;  // the same-seed group's; the different group's derive from it
  int jobs = 1;
  std::filesystem::path out_dir;
  rundir::FolderUse folder_use = rundir::FolderUse::fresh;
  std::vector<std::filesystem::path> report_files;
  // Default: identity expected (the question exec answers is why runs of one script differ).
  std::optional<bool> expect_identical;
  double loss_tolerance = 1e-4;
  // --allow-empty: an audit that compared nothing is no failure (an input of the comparison).
  bool allow_empty = false;
  // The next step's command for a --trace-ops window (the app's, which knows its command line);
  // null: the report words the re-run (compare/compare.h ComparisonOptions::rerun_command).
  std::function<std::string(const std::string& window, bool tensor_digests)> rerun_command;
  std::string tool_version = "unknown";
  // Run only this shard's runs (run p belongs to shard p mod N) into out_dir, shared with the
  // other shards, as `run --shard` does (docs/scale-out.md): no report; `compare out_dir` makes
  // it once every shard has finished. Refused with --overwrite and with report files.
  std::optional<rundir::Shard> shard;
  // --trace-ops: the steps whose aten ops each run records (REPRO_AUDIT_TRACE_OPS; the recorder's
  // op records, lib/python/repro_audit/op_records.py). Kept in the manifest, as run's.
  std::optional<trace::OpWindow> trace_ops;
  // --tensor-digests: the steps recorded per tensor, when not every step
  // (REPRO_AUDIT_TENSOR_DIGESTS).
  std::optional<trace::TensorDigestPlan> tensor_digests;
  // libra_device_digest.so beside the binary (apps: the binary knows where it is); empty when the
  // build has none. The recorder then digests on the host, and its trace says so.
  std::filesystem::path device_digest_library;
  // --keep-op STEP:INDEX: every run keeps op INDEX of step STEP whole, whatever the budget of kept
  // outputs (its outputs for the magnitude; its inputs, arguments and switches for a replay in a
  // fresh process: lib/python/repro_audit/kept_op.py), as REPRO_AUDIT_KEEP_OP. The op window
  // defaults to that step and must hold it.
  std::optional<KeptOp> keep_op;
  // --interrupt-at: every run but run 0 is stopped by its recorder at the save point of each of
  // these steps (ascending): the script's first save at or after it (rec.saved), or the
  // recorder's call of the script's save after it; exec starts the command again, the script
  // loads its file and the recorder appends to the same trace (docs/resume.md, "PyTorch"). Kept
  // in the manifest, as run's.
  std::vector<std::int64_t> interrupt_at;
  // --resume-arg: words appended to the command when it is started again after an interrupt,
  // each "{checkpoint}" replaced by the path of the file the script saved (in the run's
  // checkpoint folder: audit/interrupt_state.h). Part of the audit's spec.
  std::vector<std::string> resume_arg;
  // The steps after which each run writes its parameters' values (REPRO_AUDIT_SNAPSHOT_STEPS;
  // lib/python/repro_audit/snapshots.py): set by --versus, for the floor per parameter.
  std::vector<std::int64_t> snapshot_steps;
  // --timeout: a run still going after this many seconds is stopped and failed (exit 3); 0: none.
  double timeout_seconds = 0.0;
};

// The audit's name for a command: the first argument ending in ".py" without it ("train" for
// `python3 train.py --lr 1`), else the program's base name.
std::string exec_name(const std::vector<std::string>& command);

AuditResult run_exec_audit(const ExecOptions& options, const AuditProgress& progress = {});

// `exec --versus CMD_B -- CMD_A` (docs/equivalence.md, "The floor"): two programs that should
// compute the same up to rounding, judged against the floor that program A's runs measure.
struct VersusOptions {
  // Program A's audit: its command, seed, op window, timeout, folder use; out_dir is the parent of
  // a/ (program A: --seeds all, a.runs runs a group) and b/ (program B: one run of the seed).
  ExecOptions a;
  std::vector<std::string> command_b;
  double margin = 10.0;  // --floor-margin
};
// "python3 b.py --lr 0.1": the words of --versus, split at spaces and tabs (no shell quoting);
// InputError when there is none.
std::vector<std::string> parse_versus(const std::string& text);
// Runs both audits, then compares A's run 0, B's run and the floor: A's other same-seed runs and
// its perturbed runs (compare/equivalence_floor.h). A's different-seed runs (--seeds all plans
// them) take no part. InputError for what exec refuses, and for a shard, --interrupt-at or
// --keep-op, which an audit of two programs does not take.
compare::ComparisonResult run_versus_audit(const VersusOptions& options,
                                           const AuditProgress& progress = {});

}  // namespace ra::audit
