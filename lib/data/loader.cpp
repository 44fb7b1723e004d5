#include "data/loader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/integer_math.h"
#include "core/thread_start.h"

namespace ra::data {
namespace {

using Order = std::shared_ptr<const std::vector<std::int64_t>>;

// Resizes `images` to [count, sample_shape...] unless it already has that shape; Tensor::resize
// keeps the buffer whenever it is large enough, so a smaller last batch never reallocates either.
void shape_batch_images(Tensor& images, std::int64_t count, const Shape& sample_shape) {
  images.resize_batched(count, sample_shape);  // no allocation once the tensor has held a batch
}

// Sizes a batch's buffers for a full batch up front. The loader's batches circulate between the
// workers, the ring and the consumer by swapping, so one that was never filled could otherwise
// reach a worker many steps into training and allocate there.
void reserve_batch(Batch& batch, int batch_size, const Shape& sample_shape) {
  batch.images.resize_batched(batch_size, sample_shape);
  batch.labels.reserve(static_cast<std::size_t>(batch_size));
  batch.sample_indices.reserve(static_cast<std::size_t>(batch_size));
}

// Batch `index` of an epoch: samples order[index*B .. min((index+1)*B, n)). The one definition
// of what a batch holds; both the inline and the worker paths call it, hence identical bits.
void assemble_batch(const Dataset& data, const std::vector<std::int64_t>& order, int batch_size,
                    const Augmentation& augmentation, std::int64_t epoch, std::int64_t index,
                    Batch& out) {
  const std::int64_t n = data.size();
  const std::int64_t first = index * batch_size;
  const std::int64_t count = std::min<std::int64_t>(batch_size, n - first);
  const std::int64_t elements = data.sample_elements();
  out.epoch = epoch;
  out.index = index;
  shape_batch_images(out.images, count, data.sample_shape);
  out.labels.resize(static_cast<std::size_t>(count));
  out.sample_indices.resize(static_cast<std::size_t>(count));
  for (std::int64_t row = 0; row < count; ++row) {
    const std::int64_t sample = order[static_cast<std::size_t>(first + row)];
    std::memcpy(out.images.data() + row * elements, data.images.data() + sample * elements,
                static_cast<std::size_t>(elements) * sizeof(float));
    out.labels[static_cast<std::size_t>(row)] = data.labels[static_cast<std::size_t>(sample)];
    out.sample_indices[static_cast<std::size_t>(row)] = sample;
    if (augmentation.active()) {
      thread_local std::vector<float> plane;  // reused: no allocation per sample
      apply_transform(sample_transform(augmentation, data.sample_shape, epoch, first + row),
                      data.sample_shape, out.images.data() + row * elements, plane);
    }
  }
}

// Copies into the caller's buffers rather than swapping them out, so that the caller's tensor
// keeps its address and capacity from batch to batch.
void copy_batch(const Batch& from, Batch& to) {
  to.epoch = from.epoch;
  to.index = from.index;
  if (to.images.shape() != from.images.shape()) to.images.resize(from.images.shape());
  std::copy(from.images.begin(), from.images.end(), to.images.begin());
  to.labels.assign(from.labels.begin(), from.labels.end());
  to.sample_indices.assign(from.sample_indices.begin(), from.sample_indices.end());
}

}  // namespace

struct BatchLoader::State {
  // One prefetched batch. Only touched under `mutex`; workers assemble into private scratch
  // batches and swap them in, so an abandoned epoch's late batch can simply be dropped.
  struct Slot {
    bool ready = false;
    std::int64_t index = -1;
    Batch batch;
    std::exception_ptr error;
  };

  const Dataset& data;
  const int batch_size;
  const bool shuffle;
  const rng::PhiloxKey order_key;
  Augmentation augmentation;   // set before the first epoch (BatchLoader::set_augmentation)
  const std::int64_t batches;  // per epoch

  // Epoch in progress; with workers, every field below is guarded by `mutex`.
  bool started = false;
  std::int64_t epoch = 0;
  Order order;
  std::int64_t next_consume = 0;  // index of the batch next() returns next

  // Prefetching (workers > 0 only).
  std::mutex mutex;
  std::condition_variable work_cv;   // workers wait for a claimable batch or stop
  std::condition_variable ready_cv;  // next() waits for its batch
  bool stopping = false;
  std::uint64_t generation = 0;       // bumped by start_epoch; older work is discarded
  std::int64_t next_claim = 0;        // index of the batch the next idle worker assembles
  std::vector<Slot> slots;            // ring: batch k lives in slots[k % slots.size()]
  std::vector<Batch> worker_batches;  // one per worker: the batch it assembles into
  Batch handoff;                      // consumer-side staging, swapped with a ready slot
  std::vector<std::thread> threads;

  State(const Dataset& d, int b, bool s, bool dl, rng::PhiloxKey key)
      : data(d),
        batch_size(b),
        shuffle(s),
        order_key(key),
        batches(dl ? d.size() / b : ceil_div(d.size(), b)) {}

  // Joins the workers here rather than in ~BatchLoader so that a constructor that fails after
  // starting some threads still joins them.
  ~State() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    work_cv.notify_all();
    for (std::thread& t : threads) t.join();
  }

  // A worker may start batch k once its slot's previous occupant (k - slots) has been consumed.
  bool claimable() const {
    return started && next_claim < batches &&
           next_claim < next_consume + static_cast<std::int64_t>(slots.size());
  }

  void worker_main(std::size_t w) {
    Batch& scratch = worker_batches[w];
    std::unique_lock lock(mutex);
    for (;;) {
      work_cv.wait(lock, [&] { return stopping || claimable(); });
      if (stopping) return;
      const std::uint64_t job_generation = generation;
      const std::int64_t job_epoch = epoch;
      const std::int64_t job_index = next_claim++;
      const Order job_order = order;
      lock.unlock();
      std::exception_ptr error;
      try {
        assemble_batch(data, *job_order, batch_size, augmentation, job_epoch, job_index, scratch);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (job_generation != generation) continue;  // its epoch was abandoned meanwhile
      Slot& slot = slots[static_cast<std::size_t>(job_index) % slots.size()];
      std::swap(slot.batch, scratch);
      slot.error = error;
      slot.index = job_index;
      slot.ready = true;
      ready_cv.notify_one();
    }
  }
};

BatchLoader::BatchLoader(const Dataset& data, int batch_size, bool shuffle, bool drop_last,
                         rng::PhiloxKey order_key, int workers) {
  if (batch_size <= 0) {
    throw InputError("data.batch_size: must be positive, got " + std::to_string(batch_size));
  }
  if (workers < 0) {
    throw InputError("data.workers: must be >= 0, got " + std::to_string(workers));
  }
  if (static_cast<std::int64_t>(data.images.size()) != data.size() * data.sample_elements()) {
    throw std::logic_error("BatchLoader: data set '" + data.role + "' holds " +
                           std::to_string(data.images.size()) + " pixel values for " +
                           std::to_string(data.size()) + " samples of shape " +
                           to_string(data.sample_shape));
  }
  state_ = std::make_unique<State>(data, batch_size, shuffle, drop_last, order_key);
  if (workers > 0) {
    state_->slots.resize(2 * static_cast<std::size_t>(workers));
    // Every batch buffer sized here, before the workers start: a worker thread may first run
    // many steps into training on a loaded machine.
    state_->worker_batches.resize(static_cast<std::size_t>(workers));
    for (Batch& b : state_->worker_batches) reserve_batch(b, batch_size, data.sample_shape);
    for (State::Slot& slot : state_->slots)
      reserve_batch(slot.batch, batch_size, data.sample_shape);
    reserve_batch(state_->handoff, batch_size, data.sample_shape);
    state_->threads.reserve(static_cast<std::size_t>(workers));
    // A thread the system refuses throws RuntimeFailure; ~State joins those already started.
    for (int w = 0; w < workers; ++w) {
      state_->threads.push_back(start_thread(
          "data loader worker " + std::to_string(w + 1) + " of " + std::to_string(workers),
          [s = state_.get(), w = static_cast<std::size_t>(w)] { s->worker_main(w); }));
    }
  }
}

BatchLoader::~BatchLoader() = default;

std::int64_t BatchLoader::batches_per_epoch() const {
  return state_->batches;
}

void BatchLoader::set_augmentation(const Augmentation& augmentation) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->augmentation = augmentation;
}

void BatchLoader::start_epoch(std::int64_t epoch, std::int64_t first_batch) {
  State& s = *state_;
  if (first_batch < 0 || first_batch > s.batches) {
    throw std::logic_error("BatchLoader::start_epoch: batch " + std::to_string(first_batch) +
                           " of an epoch of " + std::to_string(s.batches));
  }
  // Computed outside the lock: shuffling 60000 samples is 60000 draws and swaps, work the
  // workers need not wait on.
  auto order = std::make_shared<const std::vector<std::int64_t>>(
      epoch_order(s.data.size(), s.shuffle, s.order_key, epoch));
  {
    std::unique_lock lock(s.mutex);
    ++s.generation;
    s.started = true;
    s.epoch = epoch;
    s.order = std::move(order);
    s.next_consume = first_batch;
    s.next_claim = first_batch;
    for (State::Slot& slot : s.slots) {
      slot.ready = false;
      slot.error = nullptr;
    }
  }
  s.work_cv.notify_all();
}

bool BatchLoader::next(Batch& batch) {
  State& s = *state_;
  if (s.threads.empty()) {
    if (!s.started) throw std::logic_error("BatchLoader::next called before start_epoch");
    if (s.next_consume >= s.batches) return false;
    assemble_batch(s.data, *s.order, s.batch_size, s.augmentation, s.epoch, s.next_consume, batch);
    ++s.next_consume;
    return true;
  }

  std::exception_ptr error;
  {
    std::unique_lock lock(s.mutex);
    if (!s.started) throw std::logic_error("BatchLoader::next called before start_epoch");
    if (s.next_consume >= s.batches) return false;
    const std::int64_t wanted = s.next_consume;
    State::Slot& slot = s.slots[static_cast<std::size_t>(wanted) % s.slots.size()];
    s.ready_cv.wait(lock, [&] { return slot.ready && slot.index == wanted; });
    std::swap(slot.batch, s.handoff);
    error = std::exchange(slot.error, nullptr);
    slot.ready = false;
    ++s.next_consume;
  }
  s.work_cv.notify_one();  // exactly one more batch became claimable
  if (error) std::rethrow_exception(error);
  copy_batch(s.handoff, batch);
  return true;
}

}  // namespace ra::data
