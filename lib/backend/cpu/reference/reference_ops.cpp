#include "backend/cpu/reference/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"

namespace ra::backend::cpu::reference {
namespace {

using Acc = double;

// Input position of output p, tap r: p * stride - pad + r; false when it falls into the padding.
bool inside(std::int64_t position, std::int64_t extent) {
  return position >= 0 && position < extent;
}

void check_labels(const char* op, int n, int classes, const std::int32_t* labels) {
  for (int i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      throw InputError(std::string(op) + ": label " + std::to_string(labels[i]) + " of sample " +
                       std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
    }
  }
}

}  // namespace

template <class T>
void conv2d_forward(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t k = 0; k < g.k; ++k)
      for (std::int64_t p = 0; p < g.p; ++p)
        for (std::int64_t q = 0; q < g.q; ++q) {
          Acc sum = 0;
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t r = 0; r < g.r; ++r)
              for (std::int64_t s = 0; s < g.s; ++s) {
                const std::int64_t ih = p * g.stride_h - g.pad_top + r;
                const std::int64_t iw = q * g.stride_w - g.pad_left + s;
                if (!inside(ih, g.h) || !inside(iw, g.w)) continue;
                sum += Acc(x[((n * g.c + c) * g.h + ih) * g.w + iw]) *
                       Acc(w[((k * g.c + c) * g.r + r) * g.s + s]);
              }
          if (bias != nullptr) sum += Acc(bias[k]);
          y[((n * g.k + k) * g.p + p) * g.q + q] = static_cast<T>(sum);
        }
}

template <class T>
void conv2d_backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  // Scatter form: every (output, tap) pair sends dy * w to the input it read.
  std::vector<Acc> sum(static_cast<std::size_t>(g.x_size()), 0.0);
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t k = 0; k < g.k; ++k)
      for (std::int64_t p = 0; p < g.p; ++p)
        for (std::int64_t q = 0; q < g.q; ++q)
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t r = 0; r < g.r; ++r)
              for (std::int64_t s = 0; s < g.s; ++s) {
                const std::int64_t ih = p * g.stride_h - g.pad_top + r;
                const std::int64_t iw = q * g.stride_w - g.pad_left + s;
                if (!inside(ih, g.h) || !inside(iw, g.w)) continue;
                sum[((n * g.c + c) * g.h + ih) * g.w + iw] +=
                    Acc(dy[((n * g.k + k) * g.p + p) * g.q + q]) *
                    Acc(w[((k * g.c + c) * g.r + r) * g.s + s]);
              }
  for (std::size_t i = 0; i < sum.size(); ++i) dx[i] = static_cast<T>(sum[i]);
}

template <class T>
void conv2d_backward_filter(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  for (std::int64_t k = 0; k < g.k; ++k)
    for (std::int64_t c = 0; c < g.c; ++c)
      for (std::int64_t r = 0; r < g.r; ++r)
        for (std::int64_t s = 0; s < g.s; ++s) {
          Acc sum = 0;
          for (std::int64_t n = 0; n < g.n; ++n)
            for (std::int64_t p = 0; p < g.p; ++p)
              for (std::int64_t q = 0; q < g.q; ++q) {
                const std::int64_t ih = p * g.stride_h - g.pad_top + r;
                const std::int64_t iw = q * g.stride_w - g.pad_left + s;
                if (!inside(ih, g.h) || !inside(iw, g.w)) continue;
                sum += Acc(dy[((n * g.k + k) * g.p + p) * g.q + q]) *
                       Acc(x[((n * g.c + c) * g.h + ih) * g.w + iw]);
              }
          dw[((k * g.c + c) * g.r + r) * g.s + s] = static_cast<T>(sum);
        }
}

template <class T>
void conv2d_backward_bias(const ConvGeometry& g, const T* dy, T* db) {
  for (std::int64_t k = 0; k < g.k; ++k) {
    Acc sum = 0;
    for (std::int64_t n = 0; n < g.n; ++n)
      for (std::int64_t i = 0; i < std::int64_t(g.p) * g.q; ++i)
        sum += Acc(dy[(n * g.k + k) * g.p * g.q + i]);
    db[k] = static_cast<T>(sum);
  }
}

template <class T>
void dense_forward(const DenseGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  for (std::int64_t i = 0; i < g.n; ++i)
    for (std::int64_t o = 0; o < g.out; ++o) {
      Acc sum = 0;
      for (std::int64_t j = 0; j < g.in; ++j) sum += Acc(x[i * g.in + j]) * Acc(w[o * g.in + j]);
      if (bias != nullptr) sum += Acc(bias[o]);
      y[i * g.out + o] = static_cast<T>(sum);
    }
}

template <class T>
void dense_backward_data(const DenseGeometry& g, const T* dy, const T* w, T* dx) {
  for (std::int64_t i = 0; i < g.n; ++i)
    for (std::int64_t j = 0; j < g.in; ++j) {
      Acc sum = 0;
      for (std::int64_t o = 0; o < g.out; ++o) sum += Acc(dy[i * g.out + o]) * Acc(w[o * g.in + j]);
      dx[i * g.in + j] = static_cast<T>(sum);
    }
}

template <class T>
void dense_backward_weight(const DenseGeometry& g, const T* x, const T* dy, T* dw) {
  for (std::int64_t o = 0; o < g.out; ++o)
    for (std::int64_t j = 0; j < g.in; ++j) {
      Acc sum = 0;
      for (std::int64_t i = 0; i < g.n; ++i) sum += Acc(dy[i * g.out + o]) * Acc(x[i * g.in + j]);
      dw[o * g.in + j] = static_cast<T>(sum);
    }
}

template <class T>
void dense_backward_bias(const DenseGeometry& g, const T* dy, T* db) {
  for (std::int64_t o = 0; o < g.out; ++o) {
    Acc sum = 0;
    for (std::int64_t i = 0; i < g.n; ++i) sum += Acc(dy[i * g.out + o]);
    db[o] = static_cast<T>(sum);
  }
}

template <class T>
void maxpool2d_forward(const PoolGeometry& g, const T* x, T* y, std::int32_t* argmax) {
  for (std::int64_t plane = 0; plane < std::int64_t(g.n) * g.c; ++plane)
    for (std::int64_t p = 0; p < g.p; ++p)
      for (std::int64_t q = 0; q < g.q; ++q) {
        T best = -std::numeric_limits<T>::infinity();
        std::int64_t best_index = -1;
        for (std::int64_t i = 0; i < g.pool_h; ++i)
          for (std::int64_t j = 0; j < g.pool_w; ++j) {
            const std::int64_t ih = p * g.stride_h - g.pad_top + i;
            const std::int64_t iw = q * g.stride_w - g.pad_left + j;
            if (!inside(ih, g.h) || !inside(iw, g.w)) continue;  // padding never wins
            const std::int64_t index = (plane * g.h + ih) * g.w + iw;
            if (best_index < 0 || x[index] > best) {  // strict: the first maximum wins ties
              best = x[index];
              best_index = index;
            }
          }
        const std::int64_t out = (plane * g.p + p) * g.q + q;
        y[out] = best;
        argmax[out] = static_cast<std::int32_t>(best_index);
      }
}

template <class T>
void maxpool2d_backward(const PoolGeometry& g, const T* dy, const std::int32_t* argmax, T* dx) {
  std::vector<Acc> sum(static_cast<std::size_t>(g.x_size()), 0.0);
  for (std::int64_t i = 0; i < g.y_size(); ++i) {
    if (argmax[i] >= 0) sum[static_cast<std::size_t>(argmax[i])] += Acc(dy[i]);
  }
  for (std::size_t i = 0; i < sum.size(); ++i) dx[i] = static_cast<T>(sum[i]);
}

template <class T>
void activation_forward(Activation act, std::int64_t count, const T* x, T* y) {
  for (std::int64_t i = 0; i < count; ++i) {
    const Acc v = x[i];
    Acc out = v;
    switch (act) {
      case Activation::none:
        break;
      case Activation::relu:
        out = v > 0 ? v : 0;
        break;
      case Activation::tanh:
        out = std::tanh(v);
        break;
      case Activation::sigmoid:
        out = 1 / (1 + std::exp(-v));
        break;  // exp(-v) = inf gives 0
    }
    y[i] = static_cast<T>(out);
  }
}

template <class T>
void activation_backward(Activation act, std::int64_t count, const T* y, const T* dy, T* dx) {
  for (std::int64_t i = 0; i < count; ++i) {
    const Acc out = y[i], grad = dy[i];
    Acc slope = 1;
    switch (act) {
      case Activation::none:
        break;
      case Activation::relu:
        slope = out > 0 ? 1 : 0;
        break;
      case Activation::tanh:
        slope = 1 - out * out;
        break;
      case Activation::sigmoid:
        slope = out * (1 - out);
        break;
    }
    dx[i] = static_cast<T>(grad * slope);
  }
}

template <class T>
void dropout_forward(std::int64_t count, std::uint32_t drop_threshold, T scale, rng::PhiloxKey key,
                     std::uint64_t draw, const T* x, T* y, std::uint8_t* mask) {
  for (std::int64_t i = 0; i < count; ++i) {
    const bool keep =
        (rng::philox_word(key, static_cast<std::uint64_t>(i), draw) >> 8) >= drop_threshold;
    y[i] = keep ? x[i] * scale : T(0);
    mask[i] = keep ? 1 : 0;
  }
}

template <class T>
void dropout_backward(std::int64_t count, T scale, const std::uint8_t* mask, const T* dy, T* dx) {
  for (std::int64_t i = 0; i < count; ++i) dx[i] = mask[i] != 0 ? dy[i] * scale : T(0);
}

template <class T>
T softmax_cross_entropy(int n, int classes, const T* logits, const std::int32_t* labels,
                        T* dlogits) {
  check_labels("softmax_cross_entropy", n, classes, labels);
  Acc total = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = logits + i * classes;
    Acc max = row[0];
    for (int j = 1; j < classes; ++j) max = std::max(max, Acc(row[j]));
    Acc sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(Acc(row[j]) - max);
    const Acc log_sum_exp = max + std::log(sum);
    total += log_sum_exp - Acc(row[labels[i]]);
    if (dlogits != nullptr) {
      for (int j = 0; j < classes; ++j) {
        const Acc softmax = std::exp(Acc(row[j]) - log_sum_exp);
        dlogits[i * classes + j] = static_cast<T>((softmax - (j == labels[i] ? 1 : 0)) / n);
      }
    }
  }
  return static_cast<T>(total / n);
}

template <class T>
T mean_squared_error(int n, int classes, const T* pred, const std::int32_t* labels, T* dpred) {
  check_labels("mean_squared_error", n, classes, labels);
  const Acc count = Acc(n) * classes;
  Acc total = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (int j = 0; j < classes; ++j) {
      const Acc diff = Acc(pred[i * classes + j]) - (j == labels[i] ? 1 : 0);
      total += diff * diff;
      if (dpred != nullptr) dpred[i * classes + j] = static_cast<T>(2 * diff / count);
    }
  return static_cast<T>(total / count);
}

#define RA_REFERENCE_INSTANTIATE(T)                                                               \
  template void conv2d_forward<T>(const ConvGeometry&, const T*, const T*, const T*, T*);         \
  template void conv2d_backward_data<T>(const ConvGeometry&, const T*, const T*, T*);             \
  template void conv2d_backward_filter<T>(const ConvGeometry&, const T*, const T*, T*);           \
  template void conv2d_backward_bias<T>(const ConvGeometry&, const T*, T*);                       \
  template void dense_forward<T>(const DenseGeometry&, const T*, const T*, const T*, T*);         \
  template void dense_backward_data<T>(const DenseGeometry&, const T*, const T*, T*);             \
  template void dense_backward_weight<T>(const DenseGeometry&, const T*, const T*, T*);           \
  template void dense_backward_bias<T>(const DenseGeometry&, const T*, T*);                       \
  template void maxpool2d_forward<T>(const PoolGeometry&, const T*, T*, std::int32_t*);           \
  template void maxpool2d_backward<T>(const PoolGeometry&, const T*, const std::int32_t*, T*);    \
  template void activation_forward<T>(Activation, std::int64_t, const T*, T*);                    \
  template void activation_backward<T>(Activation, std::int64_t, const T*, const T*, T*);         \
  template void dropout_forward<T>(std::int64_t, std::uint32_t, T, rng::PhiloxKey, std::uint64_t, \
                                   const T*, T*, std::uint8_t*);                                  \
  template void dropout_backward<T>(std::int64_t, T, const std::uint8_t*, const T*, T*);          \
  template T softmax_cross_entropy<T>(int, int, const T*, const std::int32_t*, T*);               \
  template T mean_squared_error<T>(int, int, const T*, const std::int32_t*, T*);

RA_REFERENCE_INSTANTIATE(float)
RA_REFERENCE_INSTANTIATE(double)
#undef RA_REFERENCE_INSTANTIATE

}  // namespace ra::backend::cpu::reference
