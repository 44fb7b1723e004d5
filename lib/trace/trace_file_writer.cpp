#include "trace/trace_file_writer.h"

#include <array>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "core/error.h"
#include "trace/resume_record.h"
#include "trace/trace_io.h"

namespace ra::trace {

TraceFileWriter::TraceFileWriter(std::filesystem::path path) : path_(std::move(path)) {}

TraceFileWriter::~TraceFileWriter() {
  if (file_ && !finished_) file_->keep_partial();
}

void TraceFileWriter::start(const TraceHeader& header, const std::vector<Digest128>& weights,
                            const std::vector<Digest128>& buffers) {
  if (file_) throw std::logic_error("TraceFileWriter::start twice");
  format_.format_version = header.format_version;
  header_line_ = header_line(header);
  file_.emplace(path_);
  file_->append(header_line_);
  file_->append(init_line(format_, weights, buffers));
}

void TraceFileWriter::step(const StepRecord& record) {
  if (!file_) throw std::logic_error("TraceFileWriter::step before start");
  file_->append(step_line(format_, record));
}

void TraceFileWriter::resume_point(const ResumePoint& point) {
  if (!file_) throw std::logic_error("TraceFileWriter::resume_point before start");
  file_->append(resume_line(point));
}

void TraceFileWriter::epoch(const EpochRecord& record) {
  if (!file_) throw std::logic_error("TraceFileWriter::epoch before start");
  file_->append(epoch_line(record));
  file_->flush();
}

void TraceFileWriter::finish(const TraceHeader& header, const FinalRecord& end) {
  if (!file_ || finished_) throw std::logic_error("TraceFileWriter::finish unstarted or twice");
  if (header.format_version != format_.format_version) {
    throw std::logic_error("TraceFileWriter::finish: the header changed its format version");
  }
  file_->append(end_line(format_, end));
  std::string line = header_line(header);
  if (line == header_line_) {
    file_->commit();
  } else {
    rewrite_with(line);
  }
  finished_ = true;
}

// The records after the first line of the temporary file, behind the new header line, in a new
// temporary that is then committed; the old temporary goes with its writer.
void TraceFileWriter::rewrite_with(const std::string& line) {
  file_->flush();
  std::ifstream in(file_->temporary_path(), std::ios::binary);
  in.ignore(static_cast<std::streamsize>(header_line_.size()));
  AtomicFileWriter rewritten(path_);
  rewritten.append(line);
  std::array<char, 1 << 16> chunk{};
  while (in) {
    in.read(chunk.data(), chunk.size());
    if (in.gcount() > 0) rewritten.append({chunk.data(), static_cast<std::size_t>(in.gcount())});
  }
  if (in.bad() || !in.eof()) {
    throw RuntimeFailure("cannot write " + path_.string() + ": cannot read back its records from " +
                         file_->temporary_path().string());
  }
  rewritten.commit();
  file_.reset();  // not committed: its temporary is removed
}

}  // namespace ra::trace
