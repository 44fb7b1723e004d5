#pragma once
// What exec reads of an interrupted run's recorder's file, checkpoint-step-S.recorder.json in the
// run's checkpoint folder, run-NNN/checkpoints/ (rundir/audit_folder.h kCheckpointFolderName;
// lib/python/repro_audit/checkpoint.py, docs/resume.md "PyTorch"): the
// step S it serves, the steps done at the script's save, and the name of the script's file in the
// folder, which the restarted command is given (--resume-arg's {checkpoint},
// REPRO_AUDIT_RESUME_FROM). The folder may be writable by others than its owner, so the name is
// checked to stay in it: a relative name without "." or "..", reached through folders that are no
// links, ending at a regular file that is no link.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ra::rundir {

// The recorder's file format and the one version exec reads (checkpoint.py FORMAT, VERSION).
inline constexpr const char* kInterruptStateFormat = "repro_audit python checkpoint";
inline constexpr int kInterruptStateVersion = 3;

struct InterruptState {
  std::int64_t interrupt_at = 0;  // the --interrupt-at step S this save point serves
  std::int64_t step = 0;          // the steps done at the script's save: S or more
  std::string checkpoint_file;    // the script's file, its name in the checkpoint folder
};

// The recorder's file `file` (never read through a link): InputError naming it when it is not
// one, of another version, or its fields are missing or misshapen.
InterruptState read_interrupt_state(const std::filesystem::path& file);

// The path of the checkpoint `name` in `folder` (folder / name), after checking that it stays in
// the folder: InputError saying why not otherwise.
std::filesystem::path checkpoint_in_folder(const std::filesystem::path& folder,
                                           const std::string& name);

// exec --resume-arg TEXT's words, split at spaces and tabs (no quoting: the checkpoint's path, put
// in after the split, stays one word); none for "". InputError when it is given without
// --interrupt-at (`interrupts` false), or names no {checkpoint}: the only way the script learns
// its file from it.
std::vector<std::string> parse_resume_arg(const std::string& text, bool interrupts);

// --resume-arg's words with every "{checkpoint}" replaced by `checkpoint`.
std::vector<std::string> resume_words(const std::vector<std::string>& words,
                                      const std::string& checkpoint);

}  // namespace ra::rundir
