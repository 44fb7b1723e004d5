#pragma once
// ExperimentSpec: the validated, fully-resolved form of a spec.json (docs/spec.md). Every field
// has its default filled in, so code downstream never looks at JSON again.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace ra::spec {

enum class Device { auto_select, cpu, cuda };

// ---- data -----------------------------------------------------------------------------------
// idx: MNIST-family IDX files; cifar10: CIFAR-10's binary batches; npy: NumPy arrays (an images
// and a labels file); random and constant: synthetic sets (docs/spec.md, "Data").
enum class DataFormat { idx, random, constant, cifar10, npy };
// The layout of an npy set's images: [N, C, H, W] (PyTorch's) or [N, H, W, C] (Keras').
enum class ImageLayout { nchw, nhwc };

// Sets read from files: their sample shape (idx, npy), size and classes (idx, npy) are known when
// the files are read, not from the spec.
inline bool from_files(DataFormat f) {
  return f == DataFormat::idx || f == DataFormat::cifar10 || f == DataFormat::npy;
}

// CIFAR-10's samples: 3 x 32 x 32 bytes, channel-major, of 10 classes.
inline const Shape kCifar10SampleShape{3, 32, 32};
inline constexpr int kCifar10Classes = 10;

struct DatasetSpec {
  DataFormat format = DataFormat::random;
  // idx, npy
  std::string images;  // path as written in the spec, resolved against the spec's folder
  std::string labels;
  ImageLayout layout = ImageLayout::nchw;  // npy
  std::vector<std::string> files;          // cifar10: binary batches, read in this order
  // random / constant
  std::int64_t samples = 0;
  Shape shape;  // per-sample [C, H, W] (idx: taken from the file)
  int classes = 10;
  float value = 1.0f;      // constant
  std::uint64_t seed = 0;  // random: the data set is a function of this seed, not the run's seed
  // all formats: take the first `limit` samples (0 = all)
  std::int64_t limit = 0;
};

// Keras' CIFAR-10 augmentation (data/augment.h): whole-pixel shifts with zero fill, left-right
// flips.
// What fills the cells a shift vacates: zeros, or the nearest edge pixel (Keras' default).
enum class FillMode { constant, nearest };

// Keras' CIFAR-10 augmentation (data/augment.h): shifts, whole pixels (`shift`) or fractions of
// the image's size (ImageDataGenerator's width_shift_range and height_shift_range, interpolated
// bilinearly), and left-right flips.
struct AugmentSpec {
  int shift = 0;  // at most this many pixels each way, per axis
  bool flip = false;
  float width_shift_range = 0.0f;   // at most this fraction of the width each way; [0, 1)
  float height_shift_range = 0.0f;  // of the height
  FillMode fill_mode = FillMode::constant;
  bool active() const {
    return shift > 0 || flip || width_shift_range > 0.0f || height_shift_range > 0.0f;
  }
};

struct DataSpec {
  DatasetSpec train;
  std::optional<DatasetSpec> eval;
  float scale = 1.0f;  // raw pixel value * scale (idx: uint8 pixels; synthetic: as generated)
  int batch_size = 32;
  bool shuffle = true;
  bool drop_last = false;
  int workers = 0;  // prefetching loader threads; 0 = batches are assembled on the training thread
  AugmentSpec augment;  // of the training set's batches only
};

// ---- model ----------------------------------------------------------------------------------
enum class LayerType {
  conv2d,
  maxpool2d,
  dense,
  flatten,
  dropout,
  activation,
  batchnorm,
  global_avgpool,
  residual
};
enum class Activation { none, relu, tanh, sigmoid };
enum class Padding { valid, same };
enum class Initializer { glorot_uniform, he_normal, zeros };

struct LayerSpec {
  LayerType type = LayerType::dense;
  std::string name;  // unique; defaults to "<type>_<index among that type>", e.g. "conv2d_0"
  // conv2d
  int filters = 0;
  int kernel_h = 0, kernel_w = 0;
  // conv2d and maxpool2d
  int stride_h = 1, stride_w = 1;
  Padding padding = Padding::valid;
  // maxpool2d
  int pool_h = 0, pool_w = 0;  // stride defaults to the pool size
  // dense
  int units = 0;
  // conv2d and dense
  bool use_bias = true;
  Activation activation = Activation::none;  // fused activation, or the activation layer's kind
  Initializer kernel_initializer = Initializer::glorot_uniform;
  Initializer bias_initializer = Initializer::zeros;
  // dropout
  float rate = 0.0f;
  // batchnorm: PyTorch's momentum (the weight of the batch's statistics in the running ones;
  // Keras' momentum m is 1 - m here) and epsilon.
  float momentum = 0.1f;
  float epsilon = 1e-5f;
  // residual: the body ("layers"), applied in order to the block's input; the shortcut is a 1x1
  // projection conv2d when `filters` > 0 ("shortcut": filters, stride, use_bias and the
  // initializers above are the projection's), else the identity. `activation` follows the add.
  std::vector<LayerSpec> body;
};

struct ModelSpec {
  Shape input;  // [C, H, W]
  std::vector<LayerSpec> layers;
};

// ---- loss, optimizer, training --------------------------------------------------------------
enum class Loss { softmax_cross_entropy, mean_squared_error };

enum class OptimizerType { sgd, adam, rmsprop, adadelta };

struct OptimizerSpec {
  OptimizerType type = OptimizerType::sgd;
  double lr = 0.01;
  double decay = 0.0;         // Keras time decay: lr_t = lr / (1 + decay * iterations)
  double weight_decay = 0.0;  // L2 term added to the gradient (PyTorch semantics)
  // sgd
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  // adam
  double beta1 = 0.9, beta2 = 0.999;
  // rmsprop, adadelta
  double rho = 0.9;
  // adam, rmsprop, adadelta
  double eps = 1e-7;
};

struct TrainSpec {
  int epochs = 1;
  std::int64_t max_steps = 0;  // 0 = no limit; otherwise training stops after this many steps
};

// ---- determinism ----------------------------------------------------------------------------
// deterministic: fixed reduction order, same bits for any thread count; nondeterministic:
// atomic-add reductions; autotune: (CUDA) convolution algorithms chosen by timing at start-up in
// each run, as cudnn.benchmark=True does. The CPU backend has no algorithm to choose: autotune runs
// its deterministic path there. batch_invariant: deterministic, and every op's result for one
// sample independent of the batch's size and its other samples (docs/invariance.md); reductions
// over the batch (weight and bias gradients, the loss's mean) stay deterministic, not invariant.
enum class KernelMode { deterministic, nondeterministic, autotune, batch_invariant };

// Names of the reducing ops whose implementation the spec can choose, as written in the spec
// ("conv2d.backward_filter", ...). See docs/determinism.md.
enum class ReducingOp {
  conv2d_backward_filter,
  conv2d_backward_bias,
  conv2d_backward_data,
  dense_backward_weight,
  dense_backward_bias,
  dense_backward_data,
  maxpool2d_backward,
  loss,
  batchnorm_forward_training,
  batchnorm_backward,
};
inline constexpr int kReducingOpCount = 10;

struct DeterminismSpec {
  KernelMode mode = KernelMode::deterministic;
  std::map<ReducingOp, KernelMode> ops;  // per-op overrides of `mode`

  KernelMode mode_for(ReducingOp op) const {
    auto it = ops.find(op);
    return it == ops.end() ? mode : it->second;
  }
};

// ---- the whole experiment -------------------------------------------------------------------
struct ExperimentSpec {
  std::string name;
  std::uint64_t seed = 0;
  Device device = Device::auto_select;
  int threads = 0;  // 0 = all hardware threads
  DataSpec data;
  ModelSpec model;
  Loss loss = Loss::softmax_cross_entropy;
  OptimizerSpec optimizer;
  TrainSpec train;
  DeterminismSpec determinism;
  std::string base_dir;  // folder of the spec file; relative data paths resolve against it
};

// Names as written in specs and reports.
const char* to_string(Device);
const char* to_string(DataFormat);
const char* to_string(ImageLayout);
const char* to_string(FillMode);
const char* to_string(LayerType);
const char* to_string(Activation);
const char* to_string(Padding);
const char* to_string(Initializer);
const char* to_string(Loss);
const char* to_string(OptimizerType);
const char* to_string(KernelMode);
const char* to_string(ReducingOp);
std::optional<KernelMode> kernel_mode_from_string(std::string_view);
std::optional<Device> device_from_string(std::string_view);
std::optional<ReducingOp> reducing_op_from_string(std::string_view);

}  // namespace ra::spec
