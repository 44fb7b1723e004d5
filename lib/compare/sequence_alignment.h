#pragma once
// A longest common subsequence of two sequences of keys, as diff finds one: Myers' O(ND)
// algorithm ("An O(ND) Difference Algorithm and Its Variations", Algorithmica 1986) in its linear
// space form, the middle snake found from both ends and the two halves aligned in turn, after the
// keys that only one sequence has are dropped. Time is O(N+M) for that, then O((N'+M') D) for
// the N' and M' keys left and D of them left unmatched; memory linear in N+M whatever D (a table
// of N x M cells would be 800 MB at 10,000 x 10,000 ops: issue 63 asks for memory linear in the
// ops). What aligns two programs' op records (compare/op_alignment.h).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ra::compare {

// Equal keys at a run of positions: a[a_begin + i] == b[b_begin + i] for i < length.
struct MatchedRun {
  std::size_t a_begin = 0, b_begin = 0, length = 0;
  friend bool operator==(const MatchedRun&, const MatchedRun&) = default;
};

// The matched runs of a longest common subsequence of `a` and `b`, in order, each as long as it
// can be (two runs never touch on both sides). Where several subsequences are longest, any one
// of them: which keys of a repeated run pair up is not specified.
std::vector<MatchedRun> longest_common_subsequence(std::span<const std::uint32_t> a,
                                                   std::span<const std::uint32_t> b);

}  // namespace ra::compare
