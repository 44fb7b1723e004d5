// The reference of the per-channel ops and of the residual add (reference_ops.h): plain loops over
// each channel's planes, accumulating in double (long double for T = double, so that finite
// differences stay smooth).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/cpu/reference/reference_ops.h"

namespace ra::backend::cpu::reference {
namespace {

template <class T>
using ChannelAcc = std::conditional_t<std::is_same_v<T, double>, long double, double>;

// f(index) for every element of channel c, in image then pixel order.
template <class F>
void for_each_in_channel(const ChannelGeometry& g, int c, const F& f) {
  for (std::int64_t n = 0; n < g.n; ++n) {
    const std::int64_t base = (n * g.c + c) * g.spatial();
    for (std::int64_t i = 0; i < g.spatial(); ++i) f(base + i);
  }
}

}  // namespace

template <class T>
void batchnorm_forward_training(const ChannelGeometry& g, const T* x, const T* gamma, const T* beta,
                                T momentum, T epsilon, T* running_mean, T* running_var,
                                T* saved_mean, T* saved_inv_std, T* y) {
  using A = ChannelAcc<T>;
  const A m = A(g.n) * A(g.spatial());
  for (int c = 0; c < g.c; ++c) {
    A sum = 0, squares = 0;
    for_each_in_channel(g, c, [&](std::int64_t i) { sum += A(x[i]); });
    const A mean = sum / m;
    for_each_in_channel(g, c,
                        [&](std::int64_t i) { squares += (A(x[i]) - mean) * (A(x[i]) - mean); });
    const A var = squares / m;
    const A inv_std = A(1) / std::sqrt(var + A(epsilon));
    for_each_in_channel(g, c, [&](std::int64_t i) {
      y[i] = T((A(x[i]) - mean) * inv_std * A(gamma[c]) + A(beta[c]));
    });
    saved_mean[c] = T(mean);
    saved_inv_std[c] = T(inv_std);
    const A unbiased = m > 1 ? var * m / (m - 1) : var;
    running_mean[c] = T((1 - A(momentum)) * A(running_mean[c]) + A(momentum) * mean);
    running_var[c] = T((1 - A(momentum)) * A(running_var[c]) + A(momentum) * unbiased);
  }
}

template <class T>
void batchnorm_forward_inference(const ChannelGeometry& g, const T* x, const T* gamma,
                                 const T* beta, const T* running_mean, const T* running_var,
                                 T epsilon, T* y) {
  using A = ChannelAcc<T>;
  for (int c = 0; c < g.c; ++c) {
    const A scale = A(gamma[c]) / std::sqrt(A(running_var[c]) + A(epsilon));
    for_each_in_channel(g, c, [&](std::int64_t i) {
      y[i] = T((A(x[i]) - A(running_mean[c])) * scale + A(beta[c]));
    });
  }
}

template <class T>
void batchnorm_backward(const ChannelGeometry& g, const T* x, const T* dy, const T* gamma,
                        const T* saved_mean, const T* saved_inv_std, T* dx, T* dgamma, T* dbeta) {
  using A = ChannelAcc<T>;
  const A m = A(g.n) * A(g.spatial());
  for (int c = 0; c < g.c; ++c) {
    const A mean = saved_mean[c], inv_std = saved_inv_std[c];
    A sum_dy = 0, sum_dy_centered = 0;
    for_each_in_channel(g, c, [&](std::int64_t i) {
      sum_dy += A(dy[i]);
      sum_dy_centered += A(dy[i]) * (A(x[i]) - mean);
    });
    const A dgamma_c = inv_std * sum_dy_centered;
    dbeta[c] = T(sum_dy);
    dgamma[c] = T(dgamma_c);
    for_each_in_channel(g, c, [&](std::int64_t i) {
      const A centered = A(x[i]) - mean;
      dx[i] =
          T(A(gamma[c]) * inv_std * (A(dy[i]) - sum_dy / m - centered * inv_std * dgamma_c / m));
    });
  }
}

template <class T>
void global_avgpool_forward(const ChannelGeometry& g, const T* x, T* y) {
  using A = ChannelAcc<T>;
  for (std::int64_t plane = 0; plane < g.planes(); ++plane) {
    A sum = 0;
    for (std::int64_t i = 0; i < g.spatial(); ++i) sum += A(x[plane * g.spatial() + i]);
    y[plane] = T(sum / A(g.spatial()));
  }
}

template <class T>
void global_avgpool_backward(const ChannelGeometry& g, const T* dy, T* dx) {
  using A = ChannelAcc<T>;
  for (std::int64_t plane = 0; plane < g.planes(); ++plane) {
    for (std::int64_t i = 0; i < g.spatial(); ++i) {
      dx[plane * g.spatial() + i] = T(A(dy[plane]) / A(g.spatial()));
    }
  }
}

template <class T>
void residual_add(std::int64_t count, const T* a, const T* b, T* y) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = T(ChannelAcc<T>(a[i]) + ChannelAcc<T>(b[i]));
}

#define RA_INSTANTIATE_CHANNEL_REFERENCE(T)                                                 \
  template void batchnorm_forward_training<T>(const ChannelGeometry&, const T*, const T*,   \
                                              const T*, T, T, T*, T*, T*, T*, T*);          \
  template void batchnorm_forward_inference<T>(const ChannelGeometry&, const T*, const T*,  \
                                               const T*, const T*, const T*, T, T*);        \
  template void batchnorm_backward<T>(const ChannelGeometry&, const T*, const T*, const T*, \
                                      const T*, const T*, T*, T*, T*);                      \
  template void global_avgpool_forward<T>(const ChannelGeometry&, const T*, T*);            \
  template void global_avgpool_backward<T>(const ChannelGeometry&, const T*, T*);           \
  template void residual_add<T>(std::int64_t, const T*, const T*, T*);
RA_INSTANTIATE_CHANNEL_REFERENCE(float)
RA_INSTANTIATE_CHANNEL_REFERENCE(double)
#undef RA_INSTANTIATE_CHANNEL_REFERENCE

}  // namespace ra::backend::cpu::reference
