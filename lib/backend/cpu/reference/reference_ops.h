#pragma once
// The reference implementation of every op of ops.h: naive loops straight from the definitions,
// accumulating in double, single-threaded. It is the yardstick the fast kernels are tested against
// (and will stay when those kernels are replaced), so it favours being obviously right over speed.
//
// Same contracts and signatures as the Ops methods minus the KernelMode (a plain loop has one
// order). Templates instantiated for float (to compare with the fast ops) and double (for
// finite-difference gradient checks, where the objective must be smooth to ~1e-16).
#include <cstdint>

#include "backend/geometry.h"
#include "backend/modes.h"
#include "rng/philox.h"

namespace ra::backend::cpu::reference {

template <class T>
void conv2d_forward(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y);
template <class T>
void conv2d_backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx);
template <class T>
void conv2d_backward_filter(const ConvGeometry& g, const T* x, const T* dy, T* dw);
template <class T>
void conv2d_backward_bias(const ConvGeometry& g, const T* dy, T* db);

template <class T>
void dense_forward(const DenseGeometry& g, const T* x, const T* w, const T* bias, T* y);
template <class T>
void dense_backward_data(const DenseGeometry& g, const T* dy, const T* w, T* dx);
template <class T>
void dense_backward_weight(const DenseGeometry& g, const T* x, const T* dy, T* dw);
template <class T>
void dense_backward_bias(const DenseGeometry& g, const T* dy, T* db);

template <class T>
void maxpool2d_forward(const PoolGeometry& g, const T* x, T* y, std::int32_t* argmax);
template <class T>
void maxpool2d_backward(const PoolGeometry& g, const T* dy, const std::int32_t* argmax, T* dx);

// Batch normalisation (reference_channel_ops.cpp): the statistics of each channel in double over
// its N*H*W elements, the contracts of ops.h.
template <class T>
void batchnorm_forward_training(const ChannelGeometry& g, const T* x, const T* gamma, const T* beta,
                                T momentum, T epsilon, T* running_mean, T* running_var,
                                T* saved_mean, T* saved_inv_std, T* y);
template <class T>
void batchnorm_forward_inference(const ChannelGeometry& g, const T* x, const T* gamma,
                                 const T* beta, const T* running_mean, const T* running_var,
                                 T epsilon, T* y);
template <class T>
void batchnorm_backward(const ChannelGeometry& g, const T* x, const T* dy, const T* gamma,
                        const T* saved_mean, const T* saved_inv_std, T* dx, T* dgamma, T* dbeta);

// Global average pooling: y[n, c] = the plane's mean (reference_channel_ops.cpp).
template <class T>
void global_avgpool_forward(const ChannelGeometry& g, const T* x, T* y);
template <class T>
void global_avgpool_backward(const ChannelGeometry& g, const T* dy, T* dx);

template <class T>
void activation_forward(Activation act, std::int64_t count, const T* x, T* y);
template <class T>
void activation_backward(Activation act, std::int64_t count, const T* y, const T* dy, T* dx);

template <class T>
void residual_add(std::int64_t count, const T* a, const T* b, T* y);

template <class T>
void dropout_forward(std::int64_t count, std::uint32_t drop_threshold, T scale, rng::PhiloxKey key,
                     std::uint64_t draw, const T* x, T* y, std::uint8_t* mask);
template <class T>
void dropout_backward(std::int64_t count, T scale, const std::uint8_t* mask, const T* dy, T* dx);

// Labels outside [0, classes) throw ra::InputError, as in the fast ops.
template <class T>
T softmax_cross_entropy(int n, int classes, const T* logits, const std::int32_t* labels,
                        T* dlogits);
template <class T>
T mean_squared_error(int n, int classes, const T* pred, const std::int32_t* labels, T* dpred);

}  // namespace ra::backend::cpu::reference
