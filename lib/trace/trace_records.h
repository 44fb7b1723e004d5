#pragma once
// The records of a trace, each read alone (docs/trace-format.md, "Records"): every field through a
// checked Field (trace/trace_fields.h), so that a field of the wrong type or range is an
// InputError naming the file, the line and the field. How each record agrees with the records
// before it is the reader's (trace_read.cpp).
#include <cstdint>
#include <vector>

#include "trace/trace.h"
#include "trace/trace_fields.h"

namespace ra::trace::records {

TraceHeader read_header(const Field& record);
// A record's per-buffer digests (version 3; none before).
std::vector<Digest128> read_buffer_digests(const Field& record, const TraceHeader& header);
// A step record without its op records (read_ops).
StepRecord read_step(const Field& record, const TraceHeader& header);
// The op records of a step: present exactly when the step is in the header's window.
void read_ops(const Field& record, const TraceHeader& header, StepRecord& step);
EpochRecord read_epoch(const Field& record);
FinalRecord read_final(const Field& record, const TraceHeader& header);
// A float kept as exact bits and, for reading, as a JSON number: the two must agree (the writer
// writes a NaN or an infinity as null).
void check_float_copy(const Field& value, std::uint32_t bits, const char* bits_field);

}  // namespace ra::trace::records
