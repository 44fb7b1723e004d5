// Two programs' op records at one step, aligned, and where they part (compare/op_alignment.h).
#include "compare/op_alignment.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "compare/sequence_alignment.h"

namespace ra::compare {
namespace {

struct DigestHash {
  std::size_t operator()(const Digest128& d) const {
    return static_cast<std::size_t>(d.high ^ (d.low * 0x9e3779b97f4a7c15u));
  }
};

// The key a record aligns by, (layer, op), as a number: equal keys, equal numbers, over both
// streams.
class KeyNumbers {
 public:
  std::vector<std::uint32_t> of(const std::vector<trace::OpRecord>& records) {
    std::vector<std::uint32_t> keys;
    keys.reserve(records.size());
    std::string key;
    for (const trace::OpRecord& r : records) {
      key.assign(r.layer).push_back('\0');
      key.append(r.op);
      const auto [it, added] =
          numbers_.try_emplace(key, static_cast<std::uint32_t>(numbers_.size()));
      keys.push_back(it->second);
    }
    return keys;
  }

 private:
  std::unordered_map<std::string, std::uint32_t> numbers_;
};

// Positions where two digest lists differ, a digest one has and the other lacks included.
std::vector<std::size_t> differing_positions(const std::vector<Digest128>& a,
                                             const std::vector<Digest128>& b) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size() || i >= b.size() || a[i] != b[i]) out.push_back(i);
  }
  return out;
}

// Which stretch last wrote each digest, on one side: where a value an aligned op reads came from.
using Producers = std::unordered_map<Digest128, std::size_t, DigestHash>;

void note_outputs(const std::vector<trace::OpRecord>& records, std::size_t begin, std::size_t end,
                  std::size_t stretch, Producers& producers) {
  for (std::size_t i = begin; i < end; ++i) {
    for (const Digest128& d : records[i].out) producers[d] = stretch;
  }
}

// The latest unaligned stretch that wrote one of the differing inputs of records `a` and `b`.
std::optional<std::size_t> unaligned_source(const trace::OpRecord& a, const trace::OpRecord& b,
                                            const std::vector<std::size_t>& positions,
                                            const std::vector<OpStretch>& stretches,
                                            const Producers& of_a, const Producers& of_b) {
  std::optional<std::size_t> source;
  const auto consider = [&](const trace::OpRecord& r, const Producers& producers, std::size_t p) {
    if (p >= r.in.size()) return;
    const auto it = producers.find(r.in[p]);
    if (it == producers.end() || stretches[it->second].aligned) return;
    if (!source || it->second > *source) source = it->second;
  };
  for (std::size_t p : positions) {
    consider(a, of_a, p);
    consider(b, of_b, p);
  }
  return source;
}

// The first place where the programs part, walking the stretches in order (compare/op_alignment.h
// OpParting).
std::optional<OpParting> first_parting(const std::vector<trace::OpRecord>& a,
                                       const std::vector<trace::OpRecord>& b,
                                       const std::vector<OpStretch>& stretches) {
  Producers of_a, of_b;
  for (std::size_t s = 0; s < stretches.size(); ++s) {
    const OpStretch& st = stretches[s];
    for (std::size_t k = 0; st.aligned && k < st.a_count(); ++k) {
      const std::size_t i = st.a_begin + k, j = st.b_begin + k;
      std::vector<std::size_t> inputs = differing_positions(a[i].in, b[j].in);
      if (!inputs.empty()) {
        OpParting p{OpParting::Kind::inputs, i, j, inputs, std::nullopt};
        p.stretch = unaligned_source(a[i], b[j], inputs, stretches, of_a, of_b);
        if (p.stretch) p.kind = OpParting::Kind::stretch;
        return p;
      }
      if (std::vector<std::size_t> outputs = differing_positions(a[i].out, b[j].out);
          !outputs.empty()) {
        return OpParting{OpParting::Kind::op, i, j, std::move(outputs), std::nullopt};
      }
      note_outputs(a, i, i + 1, s, of_a);
      note_outputs(b, j, j + 1, s, of_b);
    }
    if (!st.aligned) {
      note_outputs(a, st.a_begin, st.a_end, s, of_a);
      note_outputs(b, st.b_begin, st.b_end, s, of_b);
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<OpStretch> align_op_records(const std::vector<trace::OpRecord>& a,
                                        const std::vector<trace::OpRecord>& b) {
  KeyNumbers numbers;
  const std::vector<std::uint32_t> ka = numbers.of(a), kb = numbers.of(b);
  std::vector<OpStretch> stretches;
  std::size_t next_a = 0, next_b = 0;
  for (const MatchedRun& run : longest_common_subsequence(ka, kb)) {
    if (run.a_begin > next_a || run.b_begin > next_b) {
      stretches.push_back({next_a, run.a_begin, next_b, run.b_begin, false});
    }
    next_a = run.a_begin + run.length;
    next_b = run.b_begin + run.length;
    stretches.push_back({run.a_begin, next_a, run.b_begin, next_b, true});
  }
  if (next_a < a.size() || next_b < b.size()) {
    stretches.push_back({next_a, a.size(), next_b, b.size(), false});
  }
  return stretches;
}

std::size_t StepAlignment::unaligned() const {
  return static_cast<std::size_t>(std::count_if(stretches.begin(), stretches.end(),
                                                [](const OpStretch& s) { return !s.aligned; }));
}

StepAlignment align_step(const trace::StepRecord& a, const trace::StepRecord& b) {
  return align_ops(a.step, a.ops, b.ops);
}

StepAlignment align_ops(std::int64_t step, const std::vector<trace::OpRecord>& a,
                        const std::vector<trace::OpRecord>& b) {
  StepAlignment out;
  out.step = step;
  out.a_records = a.size();
  out.b_records = b.size();
  out.stretches = align_op_records(a, b);
  for (const OpStretch& s : out.stretches) {
    if (s.aligned) out.aligned += s.a_count();
  }
  out.parting = first_parting(a, b, out.stretches);
  return out;
}

std::string layers_of(const std::vector<trace::OpRecord>& records, std::size_t begin,
                      std::size_t end) {
  constexpr std::size_t kNamed = 4;
  std::unordered_set<std::string_view> seen;
  std::string text;
  for (std::size_t i = begin; i < end; ++i) {
    const std::string_view layer =
        records[i].layer.empty() ? std::string_view("(none)") : std::string_view(records[i].layer);
    if (!seen.insert(layer).second || seen.size() > kNamed) continue;
    text += (text.empty() ? "" : ", ") + std::string(layer);
  }
  if (seen.size() > kNamed) text += " and " + std::to_string(seen.size() - kNamed) + " more";
  return text;
}

std::size_t occurrence_of(const std::vector<trace::OpRecord>& records, std::size_t index) {
  const trace::OpRecord& r = records[index];
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(index),
                    [&](const trace::OpRecord& o) { return o.layer == r.layer && o.op == r.op; }));
}

}  // namespace ra::compare
