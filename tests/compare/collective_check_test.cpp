// The collective as a cause (compare/collective_check.h): a bucket whose inputs agree with the
// reference run's on every rank and whose result does not names the collective; one whose input
// already differs names a cause inside the rank; layouts that differ are named, not compared.
#include <catch2/catch.hpp>

#include "compare/collective_check.h"
#include "trace/in_memory_traces.h"

namespace {

using namespace ra::compare;
using namespace ra::trace;

// Run `run` of 2 ranks, 3 steps, two buckets a step, the same digests on both ranks' inputs
// (as if the batches agreed) and results.
RunBuckets two_buckets(int run) {
  RunBuckets b;
  b.run = run;
  b.comm_hook = "default";
  b.bucket_cap_bytes = 26214400;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<StepBuckets> steps;
    for (std::int64_t s = 0; s < 3; ++s) {
      StepBuckets step{s, {}};
      for (std::int64_t k = 0; k < 2; ++k) {
        const auto v = static_cast<std::uint64_t>(10 * s + k);
        step.calls.push_back(CollectiveRecord{k,
                                              {k == 0 ? "fc.bias" : "fc.weight"},
                                              k == 0 ? 2 : 12,
                                              "f32",
                                              ra::Digest128{v, 1},
                                              ra::Digest128{v, 2}});
      }
      steps.push_back(step);
    }
    b.ranks.push_back(steps);
  }
  return b;
}

DistributedFindings gloo() {
  DistributedFindings f;
  f.world_size = 2;
  f.backend = "gloo";
  f.comm_hook = "default";
  return f;
}

}  // namespace

TEST_CASE("runs whose buckets agree have no collective finding", "[compare]") {
  CHECK_FALSE(collective_divergence(two_buckets(0), two_buckets(1)));
  CHECK_FALSE(bucket_layout_difference(two_buckets(0), two_buckets(1)));
}

TEST_CASE("identical inputs and another result name the collective of the bucket", "[compare]") {
  RunBuckets other = two_buckets(2);
  for (auto& rank : other.ranks) rank[1].calls[1].after = ra::test::changed(rank[1].calls[1].after);
  other.ranks[1][2].calls[0].before = ra::test::changed(other.ranks[1][2].calls[0].before);
  const auto d = collective_divergence(two_buckets(0), other);
  REQUIRE(d);
  CHECK(d->run == 2);
  CHECK(d->step == 1);
  CHECK(d->bucket == 1);
  CHECK(d->params == std::vector<std::string>{"fc.weight"});
  CHECK(d->rank == 0);
  CHECK(d->inputs_identical);
  DistributedFindings f = gloo();
  f.nccl = {{"NCCL_ALGO", "Ring"}};
  CHECK(describe(*d, f) ==
        "root cause: the collective (gloo, NCCL_ALGO=Ring): bucket 1 (1 parameter, first "
        "fc.weight, 12 elements) at step 1 of run 2 had identical inputs on every rank, and rank "
        "0's result differs from the reference run's; no kernel inside a rank");
}

TEST_CASE("an input that differs on one rank is a cause inside that rank", "[compare]") {
  RunBuckets other = two_buckets(1);
  other.ranks[1][0].calls[0].before = ra::test::changed(other.ranks[1][0].calls[0].before);
  for (auto& rank : other.ranks) rank[0].calls[0].after = ra::test::changed(rank[0].calls[0].after);
  const auto d = collective_divergence(two_buckets(0), other);
  REQUIRE(d);
  CHECK(d->step == 0);
  CHECK(d->rank == 1);
  CHECK_FALSE(d->inputs_identical);
  CHECK(describe(*d, gloo())
            .starts_with("the collective is not the cause: rank 1's input to "
                         "bucket 0 (1 parameter, first fc.bias, 2 elements)"));
}

TEST_CASE("nccl without a pinned algorithm and protocol is told to pin them", "[compare]") {
  RunBuckets other = two_buckets(1);
  other.ranks[0][0].calls[0].after = ra::test::changed(other.ranks[0][0].calls[0].after);
  const auto d = collective_divergence(two_buckets(0), other);
  REQUIRE(d);
  DistributedFindings f = gloo();
  f.backend = "nccl";
  CHECK(
      describe(*d, f).ends_with("(NCCL has no determinism switch: pin NCCL_ALGO and "
                                "NCCL_PROTO)"));
}

TEST_CASE("buckets laid out otherwise are named and not compared", "[compare]") {
  RunBuckets other = two_buckets(1);
  std::swap(other.ranks[1][1].calls[0], other.ranks[1][1].calls[1]);
  other.ranks[0][2].calls[0].after = ra::test::changed(other.ranks[0][2].calls[0].after);
  const auto layout = bucket_layout_difference(two_buckets(0), other);
  REQUIRE(layout);
  CHECK(layout->step == 1);
  CHECK(layout->rank == 1);
  CHECK(layout->difference ==
        "run 0 reduced bucket 0 [fc.bias] (2 f32), bucket 1 [fc.weight] (12 f32); run 1 reduced "
        "bucket 1 [fc.weight] (12 f32), bucket 0 [fc.bias] (2 f32)");
  CHECK_FALSE(collective_divergence(two_buckets(0), other));  // step 2 is past the layout's
}

TEST_CASE("another bucket cap or hook is named before any step", "[compare]") {
  RunBuckets capped = two_buckets(1);
  capped.bucket_cap_bytes = 1048576;
  const auto cap = bucket_layout_difference(two_buckets(0), capped);
  REQUIRE(cap);
  CHECK_FALSE(cap->step);
  CHECK(cap->difference ==
        "bucket cap (bucket_cap_mb) 26214400 bytes in run 0, 1048576 bytes in run 1");
  RunBuckets hooked = two_buckets(3);
  hooked.comm_hook = "fp16_compress_hook";
  CHECK(bucket_layout_difference(two_buckets(0), hooked)->difference ==
        "communication hook default in run 0, fp16_compress_hook in run 3");
}

TEST_CASE("a run's buckets are read from its ranks' traces", "[compare]") {
  std::vector<Trace> ranks{ra::test::TraceBuilder{}.build(4), ra::test::TraceBuilder{}.build(4)};
  for (Trace& t : ranks) {
    t.header.distributed = RankPlacement{0, 2, "gloo", {}, "default", 1024};
    t.steps[1].collectives = two_buckets(4).ranks[0][1].calls;
  }
  ranks[1].header.distributed->rank = 1;
  const RunBuckets b = buckets_of(ranks, 4);
  CHECK(b.run == 4);
  CHECK(b.comm_hook == "default");
  CHECK(b.bucket_cap_bytes == 1024);
  REQUIRE(b.ranks.size() == 2);
  CHECK(b.ranks[1].at(1).calls == two_buckets(4).ranks[0][1].calls);
  CHECK(b.ranks[1].at(0).calls.empty());
}
