// Myers' linear-space longest common subsequence (compare/sequence_alignment.h). The middle snake
// search follows the formulation of Neil Fraser's diff-match-patch (`diff_bisect`): the forward
// and the reverse D-paths advance together and meet on one diagonal at d = ceil(D/2); the problem
// is split there and each half, of edit distance at most D/2, is aligned in turn. So the recursion
// is about log2(D) deep and each level costs O((N+M) D / 2^level): O((N+M) D) in all.
#include "compare/sequence_alignment.h"

#include <algorithm>
#include <unordered_set>

namespace ra::compare {
namespace {

using Index = std::ptrdiff_t;

class Aligner {
 public:
  Aligner(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b)
      : a_(a), b_(b), forward_(a.size() + b.size() + 4), reverse_(a.size() + b.size() + 4) {}

  // Aligns a[a0, a1) with b[b0, b1), appending the matched runs in order.
  void align(Index a0, Index a1, Index b0, Index b1) {
    Index prefix = 0;
    while (a0 + prefix < a1 && b0 + prefix < b1 && a_[a0 + prefix] == b_[b0 + prefix]) ++prefix;
    match(a0, b0, prefix);
    a0 += prefix;
    b0 += prefix;
    Index suffix = 0;
    while (a1 - suffix > a0 && b1 - suffix > b0 && a_[a1 - suffix - 1] == b_[b1 - suffix - 1]) {
      ++suffix;
    }
    if (a0 < a1 - suffix && b0 < b1 - suffix) {
      Index x = 0, y = 0;
      if (middle(a0, a1 - suffix, b0, b1 - suffix, x, y)) {
        align(a0, a0 + x, b0, b0 + y);
        align(a0 + x, a1 - suffix, b0 + y, b1 - suffix);
      }
      // Not found: the two have no key in common, nothing to match.
    }
    match(a1 - suffix, b1 - suffix, suffix);
  }

  std::vector<MatchedRun> runs;

 private:
  void match(Index a, Index b, Index length) {
    if (length == 0) return;
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    if (!runs.empty()) {
      MatchedRun& last = runs.back();
      if (last.a_begin + last.length == ua && last.b_begin + last.length == ub) {
        last.length += static_cast<std::size_t>(length);
        return;
      }
    }
    runs.push_back({ua, ub, static_cast<std::size_t>(length)});
  }

  // Where a shortest edit script of a[a0, a1) into b[b0, b1) (both non-empty, their first and
  // last keys differing) crosses its middle, relative to (a0, b0): false when the two share no
  // key. v[offset + k] is the furthest x reached on diagonal k = x - y (the reverse path counts
  // from the ends); -1: not reached.
  bool middle(Index a0, Index a1, Index b0, Index b1, Index& split_x, Index& split_y) {
    const Index n = a1 - a0, m = b1 - b0;
    const Index max_d = (n + m + 1) / 2;
    const Index offset = max_d, length = 2 * max_d + 2;
    std::fill(forward_.begin(), forward_.begin() + length, Index{-1});
    std::fill(reverse_.begin(), reverse_.begin() + length, Index{-1});
    forward_[offset + 1] = 0;
    reverse_[offset + 1] = 0;
    const Index delta = n - m;
    const bool front = delta % 2 != 0;  // an odd delta: the forward path meets the reverse one
    Index k1start = 0, k1end = 0, k2start = 0, k2end = 0;  // diagonals run off the edges
    for (Index d = 0; d < max_d; ++d) {
      for (Index k1 = -d + k1start; k1 <= d - k1end; k1 += 2) {
        const Index i = offset + k1;
        Index x1 = (k1 == -d || (k1 != d && forward_[i - 1] < forward_[i + 1]))
                       ? forward_[i + 1]
                       : forward_[i - 1] + 1;
        Index y1 = x1 - k1;
        while (x1 < n && y1 < m && a_[a0 + x1] == b_[b0 + y1]) ++x1, ++y1;
        forward_[i] = x1;
        if (x1 > n) {
          k1end += 2;
        } else if (y1 > m) {
          k1start += 2;
        } else if (front) {
          const Index j = offset + delta - k1;
          if (j >= 0 && j < length && reverse_[j] != -1 && x1 >= n - reverse_[j]) {
            split_x = x1, split_y = y1;
            return true;
          }
        }
      }
      for (Index k2 = -d + k2start; k2 <= d - k2end; k2 += 2) {
        const Index i = offset + k2;
        Index x2 = (k2 == -d || (k2 != d && reverse_[i - 1] < reverse_[i + 1]))
                       ? reverse_[i + 1]
                       : reverse_[i - 1] + 1;
        Index y2 = x2 - k2;
        while (x2 < n && y2 < m && a_[a1 - x2 - 1] == b_[b1 - y2 - 1]) ++x2, ++y2;
        reverse_[i] = x2;
        if (x2 > n) {
          k2end += 2;
        } else if (y2 > m) {
          k2start += 2;
        } else if (!front) {
          const Index j = offset + delta - k2;
          if (j >= 0 && j < length && forward_[j] != -1 && forward_[j] >= n - x2) {
            split_x = forward_[j], split_y = forward_[j] - (j - offset);
            return true;
          }
        }
      }
    }
    return false;
  }

  std::span<const std::uint32_t> a_, b_;
  std::vector<Index> forward_, reverse_;  // reused by every middle(): one allocation in all
};

// The positions of `keys` whose key `other` has too: a key in one sequence alone can be in no
// common subsequence, so dropping those first (as GNU diff drops the lines without a match in the
// other file) leaves the same subsequences with D counting only keys both have. Two programs that
// differ in ops of their own (a fused op, a copy, another module) then align in O(N + M).
std::vector<std::size_t> shared_positions(std::span<const std::uint32_t> keys,
                                          std::span<const std::uint32_t> other) {
  const std::unordered_set<std::uint32_t> in_other(other.begin(), other.end());
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (in_other.contains(keys[i])) out.push_back(i);
  }
  return out;
}

std::vector<std::uint32_t> keys_at(std::span<const std::uint32_t> keys,
                                   const std::vector<std::size_t>& positions) {
  std::vector<std::uint32_t> out;
  out.reserve(positions.size());
  for (std::size_t p : positions) out.push_back(keys[p]);
  return out;
}

}  // namespace

std::vector<MatchedRun> longest_common_subsequence(std::span<const std::uint32_t> a,
                                                   std::span<const std::uint32_t> b) {
  const std::vector<std::size_t> at_a = shared_positions(a, b), at_b = shared_positions(b, a);
  const std::vector<std::uint32_t> shared_a = keys_at(a, at_a), shared_b = keys_at(b, at_b);
  Aligner aligner(shared_a, shared_b);
  aligner.align(0, static_cast<Index>(shared_a.size()), 0, static_cast<Index>(shared_b.size()));
  // Back to the positions in `a` and `b`: a run of the shared keys splits where a dropped key lay
  // within it on either side.
  std::vector<MatchedRun> runs;
  for (const MatchedRun& shared : aligner.runs) {
    for (std::size_t i = 0; i < shared.length; ++i) {
      const std::size_t x = at_a[shared.a_begin + i], y = at_b[shared.b_begin + i];
      if (!runs.empty() && runs.back().a_begin + runs.back().length == x &&
          runs.back().b_begin + runs.back().length == y) {
        ++runs.back().length;
      } else {
        runs.push_back({x, y, 1});
      }
    }
  }
  return runs;
}

}  // namespace ra::compare
