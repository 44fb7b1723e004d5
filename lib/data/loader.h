#pragma once
// Batches of one data set in a reproducible order. A batch is a pure function of (data set,
// order key, epoch, batch index): how many worker threads assemble it, and when, cannot change a
// bit of it. That is what lets an audit attribute a divergence to kernels rather than to data.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "rng/philox.h"

namespace ra::data {

struct Batch {
  std::int64_t epoch = 0;
  std::int64_t index = 0;                    // batch index within the epoch
  Tensor images;                             // [B, C, H, W]
  std::vector<std::int32_t> labels;          // B
  std::vector<std::int64_t> sample_indices;  // B positions in the data set
  int size() const { return static_cast<int>(labels.size()); }
};

// The sample order of one epoch: identity when !shuffle; else a Fisher-Yates permutation drawn
// from Philox(order_key) with draw index b = epoch, a pure function of (key, n, epoch):
//   order = [0, 1, ..., n-1]; for j = n-1 down to 1:
//     r = philox_word(key, 2j, epoch) | philox_word(key, 2j + 1, epoch) << 32
//     swap(order[j], order[uniform_below(r, j + 1)])
std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, rng::PhiloxKey order_key,
                                      std::int64_t epoch);

// Hands out the batches of an epoch in order. Batch k of an epoch holds the samples
// order[k*B .. min((k+1)*B, n)); the last partial batch holds exactly the remaining samples (no
// padding) unless drop_last drops it.
//
// workers == 0: next() assembles the batch on the calling thread.
// workers > 0: that many threads assemble the upcoming batches into a bounded ring (2 * workers
// slots: each worker can hold one finished batch while assembling the next), and next() copies
// the oldest into the caller's Batch. Same bits as workers == 0; an exception thrown while
// assembling a batch is rethrown by the next() that would have returned it.
//
// `data` must outlive the loader. Not thread-safe itself: one thread calls start_epoch/next.
class BatchLoader {
 public:
  BatchLoader(const Dataset& data, int batch_size, bool shuffle, bool drop_last,
              rng::PhiloxKey order_key, int workers);
  ~BatchLoader();  // stops and joins the workers; safe at any point of an epoch
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  std::int64_t batches_per_epoch() const;
  // Augments every sample of the batches from the next start_epoch on (data/augment.h); call it
  // before the first start_epoch. Default: none.
  void set_augmentation(const Augmentation& augmentation);
  // Starts `epoch` (any epoch, in any order) at its batch `first_batch` (a resumed run's next;
  // batches_per_epoch(): none left); abandons whatever is left of the current one.
  void start_epoch(std::int64_t epoch, std::int64_t first_batch = 0);
  // Fills `batch` with the next batch of the epoch; false at the epoch's end. Reuses the
  // buffers of `batch` (no reallocation while the batch shape is unchanged). Calling it before
  // any start_epoch is a programming error (std::logic_error).
  bool next(Batch& batch);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ra::data
