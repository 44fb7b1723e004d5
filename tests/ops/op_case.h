#pragma once
// One case of the op table (op_table.cpp), in the spirit of ggml's test-backend-ops: an op of
// backend/ops.h at one geometry, with seeded inputs, an independent reference, a tolerance derived
// from the number of rounded terms, and whether its reductions must repeat bit for bit. The
// harness (harness.h) runs every case on the CPU backend at every instruction set and 1, 2 and 3
// threads, and on the CUDA backend under [gpu]. Adding an op = adding cases to the table (and a
// reference in references.h where backend/cpu/reference_ops.h has none).
//
// Tolerance of a float output element: |actual - value| <= units * u * scale + atol, u = 2^-24.
// A float sum of m terms in any order (sequential, chunked, atomic) is within (m - 1) u *
// sum|terms| of the exact sum (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1); a
// product before each addition adds u per term, and the reference's one final rounding adds u more:
// so units = m + 2 for an m-term dot product (sum_units), scale = the same reduction over the
// absolute values of its terms (which also covers cancellation). For a few hundred terms that is
// ~1e-5 of the scale: a worst-case bound, so cases never flake, yet any indexing error (an O(1)
// difference) fails it. Ops with no arithmetic (pooling, relu, dropout masks, optimizer rules
// that share code with the reference) have units = atol = 0: the exact value.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "core/memory.h"

namespace ops_test {

using ra::backend::KernelMode;
using ra::backend::Ops;

inline constexpr double kUnitRoundoff = 1.0 / 16777216.0;  // 2^-24

// Rounding units of an m-term float dot product against a double reference (see above).
inline double sum_units(std::int64_t terms) {
  return double(terms + 2);
}

// Host arrays of a case, by name: its inputs, and its outputs as they are before the op runs
// (floats start as NaN, so an element the op forgets to write fails the check).
struct Arrays {
  std::map<std::string, std::vector<float>> f32;
  std::map<std::string, std::vector<std::int32_t>> i32;
  std::map<std::string, std::vector<std::uint8_t>> u8;
};

// A case's arrays copied into a backend's memory (host for the CPU, device for CUDA); `returned`
// collects what an op returns on the host (a loss value, digests, a flag), compared as outputs.
class BackendArrays {
 public:
  BackendArrays(ra::Memory& memory, const Arrays& host);
  BackendArrays(const BackendArrays&) = delete;
  BackendArrays& operator=(const BackendArrays&) = delete;
  ~BackendArrays();

  float* f32(const std::string& name);
  std::int32_t* i32(const std::string& name);
  std::uint8_t* u8(const std::string& name);
  ra::Memory& memory() const { return memory_; }
  Arrays& returned() { return returned_; }
  // Every array downloaded to the host, plus the returned values.
  Arrays download() const;

 private:
  struct Buffer {
    void* data = nullptr;
    std::size_t bytes = 0;
  };
  template <class T>
  void upload_all(const std::map<std::string, std::vector<T>>& arrays,
                  std::map<std::string, Buffer>& into);
  void release() noexcept;
  Buffer& find(std::map<std::string, Buffer>& buffers, const std::string& name);

  ra::Memory& memory_;
  std::map<std::string, Buffer> f32_, i32_, u8_;
  Arrays returned_;
};

// What one float output must be (see the tolerance above). units = atol = 0: exactly `value`.
struct FloatExpectation {
  std::vector<double> value, scale;
  double units = 0, atol = 0;
};

// A case's outputs as the reference computes them: floats within their tolerance, integer and
// byte outputs (argmax, masks, digests) exactly.
struct Expected {
  std::map<std::string, FloatExpectation> f32;
  std::map<std::string, std::vector<std::int32_t>> i32;
  std::map<std::string, std::vector<std::uint8_t>> u8;
};

struct OpCase {
  std::string op;     // the Ops method, as named in ops.h
  std::string shape;  // geometry and variant, for humans
  // The op takes a KernelMode: it runs in each mode; deterministic results must have the same
  // bits for every thread count and call, nondeterministic ones need only be within tolerance.
  // Ops without a mode are deterministic by construction and checked bitwise like the first.
  bool takes_mode = false;
  // The CUDA backend may pick its convolution algorithm by timing (autotune) or by cuDNN's
  // heuristic ranking (deterministic mode: backend/cuda/conv_heuristic.h): Winograd and FFT
  // add rounding of their own, so those runs get at least 1e-4 * scale (fp32 Winograd F(4x4,3x3)
  // errors are ~1e-5 relative, Lavin & Gray 2016), and, since FFT's error is normwise, at
  // least 1e-6 of the output's largest scale (harness.cpp): still far below any indexing error.
  bool autotuned_convolution = false;
  // Inputs and the outputs' initial contents, from a fixed seed.
  std::function<Arrays()> arrays;
  // Calls the op on `ops` with pointers into `a`.
  std::function<void(Ops& ops, BackendArrays& a, KernelMode mode)> run;
  // The outputs the reference computes from the arrays (independently of any backend).
  std::function<Expected(const Arrays& arrays)> reference;
};

// The table: every op of ops.h, several geometries each.
const std::vector<OpCase>& op_table();
// The op names the table covers, in table order, each once.
std::vector<std::string> op_names();

}  // namespace ops_test
