#pragma once
// What a spec may ask for (docs/spec.md, "Limits"). Validation refuses a spec beyond these before
// anything is allocated, so an absurd spec is a clear exit 2 naming its JSON path, never a
// wrapped integer, an "out of memory" or a machine swapping itself to death.
//
// Counts are capped where the code downstream stores them (int32 sample indices and per-sample
// element offsets in the kernels) or where no real network goes, so that every product of them
// below fits in 64 bits: e.g. the largest per-sample shape is 2^16 * 2^20 * 2^20 = 2^56
// elements before the 2^31 - 1 element cap applies.
#include <cstdint>

namespace ra::spec {

inline constexpr std::int64_t kMaxSamples = (std::int64_t{1} << 31) - 1;  // labels: int32 rows
inline constexpr std::int64_t kMaxClasses = std::int64_t{1} << 24;        // 16,777,216
inline constexpr std::int64_t kMaxDimension = std::int64_t{1} << 20;      // one of C, H, W
// Kernels index one sample's elements with 32-bit ints (backend/geometry.h).
inline constexpr std::int64_t kMaxSampleElements = (std::int64_t{1} << 31) - 1;
inline constexpr std::int64_t kMaxLayers = 1024;
inline constexpr std::int64_t kMaxFilters = std::int64_t{1} << 16;  // 65,536
inline constexpr std::int64_t kMaxUnits = std::int64_t{1} << 24;    // 16,777,216
inline constexpr std::int64_t kMaxWindow = std::int64_t{1} << 16;   // kernel, pool, stride
inline constexpr std::int64_t kMaxBatchSize = 65536;
inline constexpr std::int64_t kMaxEpochs = 100000;
// Steps are written to traces as JSON numbers, which many readers (JavaScript, jq) hold as
// doubles: exact up to 2^53.
inline constexpr std::int64_t kMaxSteps = (std::int64_t{1} << 53) - 1;
inline constexpr std::int64_t kMaxThreads = 1024;
inline constexpr std::int64_t kMaxWorkers = 64;
// Files of one cifar10 set (CIFAR-10 has 5 training batches and a test batch).
inline constexpr std::int64_t kMaxDataFiles = 256;

// Memory one run plans to hold (spec/memory_plan.h): parameters, gradients, optimizer state,
// one batch's activations, the data sets and the per-step records. A fixed cap rather than this
// machine's memory, so that a spec valid on one machine is valid on every other (traces of two
// machines are compared); 64 GiB is well above what the networks this tool audits need
// (the Keras MNIST convnet plans ~0.4 GiB) and below what a large workstation or one H100 holds.
// The machine's own memory is checked when the data is loaded (train::load_data, exit 3).
inline constexpr std::uint64_t kMaxPlannedBytes = std::uint64_t{64} << 30;

}  // namespace ra::spec
