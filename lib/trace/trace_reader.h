#pragma once
// Reading a trace one record at a time (docs/trace-format.md): the checks of read_trace, with the
// memory of one step record whatever the trace's length (and 8 bytes a step: the step times whose
// median the end record must repeat). A comparison walks the traces of its runs together with it
// (compare/trace_walk.h), so that comparing a million-step run holds no run whole.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace ra::trace {

namespace detail {
class TraceParser;  // trace_read.cpp
}

class TraceReader {
 public:
  // Whether the trace must end with its end record. `optional`: the partial temporary that a run
  // interrupted while writing left (trace/trace_file_writer.h) ends where its records end; a
  // last line cut in its middle is then the end too.
  enum class End { required, optional };

  // Opens a trace file (raw or gzip-compressed, told by content) and reads its header and init
  // records. InputError naming the file, the line and the field, as read_trace.
  explicit TraceReader(const std::filesystem::path& path, End end = End::required);
  // A trace held in memory; `text` must outlive the reader.
  TraceReader(std::string_view text, std::string source, End end = End::required);
  ~TraceReader();
  TraceReader(TraceReader&&) noexcept;
  TraceReader& operator=(TraceReader&&) noexcept;

  const TraceHeader& header() const;
  const std::vector<Digest128>& initial_weights() const;
  const std::vector<Digest128>& initial_buffers() const;
  const std::string& source() const;

  // The next step record into `out`; false after the last one, when the end record has been read
  // and checked against every record before it (final()), or when a partial trace's records end.
  bool next_step(StepRecord& out);
  // The epoch records read so far (all of them once next_step returned false).
  const std::vector<EpochRecord>& epochs() const;
  // The resume records read so far (docs/resume.md).
  const std::vector<ResumePoint>& resume_points() const;
  // The end record, once next_step returned false; absent for a partial trace without one.
  const std::optional<FinalRecord>& final() const;
  std::int64_t steps_read() const;
  // After next_step returned false for a partial trace: why its records ended where they did
  // ("cut off in line 12" for a last line written halfway; "" when its last line is whole).
  const std::string& cut_off() const;

 private:
  std::unique_ptr<detail::TraceParser> parser_;
};

// A trace read and checked whole, a record at a time, without keeping its steps: its header,
// init, epoch and end records, `steps_in_source` set (compare walks the steps from the file).
// InputError as read_trace.
Trace read_trace_summary(const std::filesystem::path& path);

// What a partial trace holds: its header, init and epoch records and its step count, the steps
// themselves not kept. For the diagnosis of an interrupted run.
struct PartialTrace {
  TraceHeader header;
  std::int64_t steps = 0;
  std::optional<FinalRecord> final;  // present when the file is whole after all
  std::string cut_off;
};
PartialTrace read_partial_trace(const std::filesystem::path& path);

}  // namespace ra::trace
