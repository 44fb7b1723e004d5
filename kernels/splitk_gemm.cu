// Split-k GEMM: C[m, n] = sum over k of A(m, k) B(k, n). Atomic: C zeroed, then each (tile, slice)
// block atomicAdds its partial tile. Fixed order: each block stores its partial tile, then one
// thread per output adds the partials in slice order. B is row-major [k, n] or "n-major" (B(k, n)
// = b[n * k + kk]: the weight [out, in] of the forward product); A is either "k-major"
// (A(m, k) = a[k * m + row]: dy as the transposed operand of the weight gradient) or row-major
// [m, k] (dy of the data gradient, x of the forward product). 256 threads per block as 16 x 16,
// each computing 4 x 4 outputs of the 64 x 64 tile, rows ty + 16 i and columns tx + 16 j; the slice
// is walked kDepth terms at a time through shared memory.
#include <cstdint>

#include "core/integer_math.h"
#include "kernels/fill.cuh"
#include "kernels/launch_config.cuh"
#include "kernels/reduction_split.h"
#include "kernels/splitk_gemm.cuh"

namespace ra::kernels {
namespace {

constexpr int kTile = kGemmTile;     // 64
constexpr int kDepth = 16;           // k terms per shared-memory step
constexpr int kSide = 16;            // threads per tile side: 16 x 16 = detail::kThreads
constexpr int kPer = kTile / kSide;  // 4 x 4 outputs per thread
static_assert(kSide * kSide == detail::kThreads, "one thread per 4 x 4 outputs");

template <bool kAKMajor>
__device__ __forceinline__ float load_a(const float* a, std::int64_t m, std::int64_t k,
                                        std::int64_t row, std::int64_t kk) {
  return kAKMajor ? a[kk * m + row] : a[row * k + kk];
}

// Loads the kDepth x kTile panels of A and B at (row0, col0, k0) into shared memory, zeros
// outside the matrix or past the slice (never added: the product loop stops at the slice end).
template <bool kAKMajor, bool kBNMajor>
__device__ __forceinline__ void load_panels(const float* a, const float* b, std::int64_t m,
                                            std::int64_t n, std::int64_t k, std::int64_t row0,
                                            std::int64_t col0, std::int64_t k0, std::int64_t k_end,
                                            float (*a_panel)[kTile + 1],
                                            float (*b_panel)[kTile + 1]) {
  for (int l = threadIdx.x; l < kDepth * kTile; l += blockDim.x) {
    // B: consecutive threads read consecutive addresses in either layout (coalesced).
    const int b_kk = kBNMajor ? l % kDepth : l / kTile;
    const int col = kBNMajor ? l / kDepth : l % kTile;
    const std::int64_t bk = k0 + b_kk, bc = col0 + col;
    const bool inside = bk < k_end && bc < n;
    b_panel[b_kk][col] = inside ? (kBNMajor ? b[bc * k + bk] : b[bk * n + bc]) : 0.0f;
    // A: consecutive threads read consecutive addresses in either layout.
    const int a_kk = kAKMajor ? l / kTile : l % kDepth;
    const int a_row = kAKMajor ? l % kTile : l / kDepth;
    const std::int64_t ak = k0 + a_kk, ar = row0 + a_row;
    a_panel[a_kk][a_row] = ak < k_end && ar < m ? load_a<kAKMajor>(a, m, k, ar, ak) : 0.0f;
  }
}

// kStore: each block stores its partial tile into its slice's plane of c ([slices][m][n], '=');
// otherwise it atomicAdds the partial into c[m][n].
template <bool kAKMajor, bool kBNMajor, bool kStore>
__global__ void __launch_bounds__(detail::kThreads)
    splitk_gemm_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                       const float* b, float* c, int slices) {
  // Each panel has one padding column so that the loads along k (A row-major, B n-major) do not
  // all hit one bank.
  __shared__ float a_panel[kDepth][kTile + 1];
  __shared__ float b_panel[kDepth][kTile + 1];
  const std::int64_t k_begin = slice_begin(k, slices, blockIdx.z);
  const std::int64_t k_end = slice_begin(k, slices, blockIdx.z + 1);
  if (k_begin >= k_end) return;  // never planned; a whole block returns, no barrier is skipped
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const std::int64_t tiles_m = ra::ceil_div(m, std::int64_t(kTile));
  const std::int64_t tiles_n = ra::ceil_div(n, std::int64_t(kTile));
  for (std::int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    for (std::int64_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
      const std::int64_t row0 = tm * kTile, col0 = tn * kTile;
      float acc[kPer][kPer] = {};
      for (std::int64_t k0 = k_begin; k0 < k_end; k0 += kDepth) {
        load_panels<kAKMajor, kBNMajor>(a, b, m, n, k, row0, col0, k0, k_end, a_panel, b_panel);
        __syncthreads();
        const int depth = k_end - k0 < kDepth ? static_cast<int>(k_end - k0) : kDepth;
        for (int kk = 0; kk < depth; ++kk) {
          float av[kPer], bv[kPer];
          for (int i = 0; i < kPer; ++i) av[i] = a_panel[kk][ty + kSide * i];
          for (int j = 0; j < kPer; ++j) bv[j] = b_panel[kk][tx + kSide * j];
          for (int i = 0; i < kPer; ++i)
            for (int j = 0; j < kPer; ++j) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();  // the panels are reloaded by the next step
      }
      for (int i = 0; i < kPer; ++i) {
        const std::int64_t row = row0 + ty + kSide * i;
        for (int j = 0; j < kPer; ++j) {
          const std::int64_t col = col0 + tx + kSide * j;
          if (row >= m || col >= n) continue;
          if (kStore) {
            c[blockIdx.z * m * n + row * n + col] = acc[i][j];
          } else {
            atomicAdd(c + row * n + col, acc[i][j]);
          }
        }
      }
    }
  }
}

// Pass 2 of the fixed-order split: c[i] = partials[0][i] + partials[1][i] + ..., left to right.
__global__ void sum_slices_kernel(std::int64_t outputs, int slices, const float* partials,
                                  float* c) {
  for (std::int64_t i = detail::grid_first(); i < outputs; i += detail::grid_stride()) {
    float sum = partials[i];
    for (int s = 1; s < slices; ++s) sum += partials[s * outputs + i];
    c[i] = sum;
  }
}

template <bool kAKMajor>
void splitk_gemm(cudaStream_t stream, std::int64_t m, std::int64_t n, std::int64_t k,
                 const float* a, const float* b, float* c, int slices) {
  if (m <= 0 || n <= 0) return;
  fill(stream, c, m * n, 0.0f);  // '=': the slices add into zeros (and k = 0 leaves zeros)
  if (k <= 0 || slices <= 0) return;
  const GridShape shape = splitk_grid(m, n, slices);
  const dim3 grid(static_cast<unsigned>(shape.x), static_cast<unsigned>(shape.y),
                  static_cast<unsigned>(shape.z));
  splitk_gemm_kernel<kAKMajor, false, false>
      <<<grid, detail::kThreads, 0, stream>>>(m, n, k, a, b, c, slices);
}

// The fixed-order split: with one slice, pass 1 writes c itself; otherwise the partials go to
// scratch and pass 2 adds them in slice order.
template <bool kAKMajor, bool kBNMajor>
void fixed_split_gemm(cudaStream_t stream, std::int64_t m, std::int64_t n, std::int64_t k,
                      const float* a, const float* b, float* c, int slices, float* scratch) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || slices <= 0) {
    fill(stream, c, m * n, 0.0f);
    return;
  }
  const GridShape shape = splitk_grid(m, n, slices);
  const dim3 grid(static_cast<unsigned>(shape.x), static_cast<unsigned>(shape.y),
                  static_cast<unsigned>(shape.z));
  float* partials = slices == 1 ? c : scratch;
  splitk_gemm_kernel<kAKMajor, kBNMajor, true>
      <<<grid, detail::kThreads, 0, stream>>>(m, n, k, a, b, partials, slices);
  if (slices == 1) return;
  sum_slices_kernel<<<detail::grid_for(m * n), detail::kThreads, 0, stream>>>(m * n, slices,
                                                                              partials, c);
}

}  // namespace

void dense_weight_grad_splitk(cudaStream_t stream, int n, int in, int out, const float* x,
                              const float* dy, float* dw, int slices) {
  // m = out, n = in, k = batch; A(o, b) = dy[b * out + o] (k-major), B = x [batch, in].
  splitk_gemm<true>(stream, out, in, n, dy, x, dw, slices);
}

std::size_t dense_weight_grad_fixed_workspace_bytes(int in, int out, int slices) {
  return slices <= 1 ? 0 : std::size_t(slices) * std::size_t(in) * std::size_t(out) * sizeof(float);
}

void dense_weight_grad_fixed(cudaStream_t stream, int n, int in, int out, const float* x,
                             const float* dy, float* dw, int slices, void* scratch) {
  // The same operands as dense_weight_grad_splitk.
  fixed_split_gemm<true, false>(stream, out, in, n, dy, x, dw, slices,
                                static_cast<float*>(scratch));
}

void dense_data_grad_splitk(cudaStream_t stream, int n, int in, int out, const float* dy,
                            const float* w, float* dx, int slices) {
  // m = batch, n = in, k = out; A = dy [batch, out] (row-major), B = w [out, in].
  splitk_gemm<false>(stream, n, in, out, dy, w, dx, slices);
}

std::size_t gemm_invariant_workspace_bytes(int rows, int cols, int k) {
  const int slices = gemm_invariant_slices(k);
  return slices <= 1 ? 0
                     : std::size_t(slices) * std::size_t(rows) * std::size_t(cols) * sizeof(float);
}

void dense_forward_invariant(cudaStream_t stream, int n, int in, int out, const float* x,
                             const float* w, float* y, void* scratch) {
  // m = batch, n = out, k = in; A = x [batch, in] (row-major), B(i, o) = w[o * in + i] (n-major).
  fixed_split_gemm<false, true>(stream, n, out, in, x, w, y, gemm_invariant_slices(in),
                                static_cast<float*>(scratch));
}

void dense_data_grad_invariant(cudaStream_t stream, int n, int in, int out, const float* dy,
                               const float* w, float* dx, void* scratch) {
  // The operands of dense_data_grad_splitk, its k (out) in fixed slices.
  fixed_split_gemm<false, false>(stream, n, in, out, dy, w, dx, gemm_invariant_slices(out),
                                 static_cast<float*>(scratch));
}

}  // namespace ra::kernels
