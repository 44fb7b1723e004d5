// The HTML report (report/html_report.h): one self-contained page, verdict first, plots as inline
// SVG; names from specs and traces cannot inject markup; a large audit stays small.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "report/html_report.h"
#include "report/svg_plot.h"
#include "support/text_lines.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::test::count_of;

using ra::test::runs_of;
using ra::test::TraceBuilder;
using ra::trace::Trace;

std::size_t position(const std::string& text, const std::string& what) {
  const auto at = text.find(what);
  INFO("looking for " << what);
  REQUIRE(at != std::string::npos);
  return at;
}

}  // namespace

TEST_CASE("the HTML report is one page, verdict first, with its plots", "[report][html]") {
  TraceBuilder b;
  b.steps = 8;
  b.eval_accuracy = {0.5, 0.6, 0.7, 0.8};
  std::vector<Trace> traces = runs_of(b, 3);
  ra::test::diverge(traces[2], 3, 1);
  const std::string html = ra::report::render_html(ra::compare::compare_traces(traces, {}));
  CHECK(html.starts_with("<!DOCTYPE html>"));
  // Self-contained: no script, no link, no external URL of any kind.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));
  CHECK(html.find("https://") == std::string::npos);
  // Verdict first, then the table, the plots, statistics and cost.
  const std::size_t banner = position(html, "<div class=\"banner diverged\">DIVERGED");
  const std::size_t table = position(html, "<h2>Per category</h2>");
  const std::size_t plots = position(html, "<h2>Plots</h2>");
  const std::size_t cost = position(html, "<h2>Cost per step</h2>");
  CHECK(banner < table);
  CHECK(table < plots);
  CHECK(plots < cost);
  // Losses, their distance from the reference, growth (ULP and parameters), the digest map.
  CHECK(count_of(html, "<svg ") == 5);
  CHECK(html.find("Training loss per step, every run") != std::string::npos);
  CHECK(html.find("|loss - reference run&#39;s loss| per step") != std::string::npos);
  CHECK(html.find("first divergence (step 3)") != std::string::npos);
  CHECK(html.find("gradients: conv2d_0.bias") != std::string::npos);
  CHECK(html.find("<td class=\"differs\">differ</td>") != std::string::npos);
}

TEST_CASE("identical runs get a green banner and no distance plot", "[report][html]") {
  const std::string html =
      ra::report::render_html(ra::compare::compare_traces(runs_of(TraceBuilder{}, 2), {}));
  CHECK(html.find("<div class=\"banner ok\">BITWISE IDENTICAL") != std::string::npos);
  CHECK(html.find("reference run&#39;s loss|") == std::string::npos);
  CHECK(html.find("bitwise identical: no distance to plot") != std::string::npos);
}

TEST_CASE("an incomplete sharded audit gets a grey banner that says so, and its missing shards",
          "[report][html][shard]") {
  ra::compare::ComparisonResult r = ra::compare::compare_traces(runs_of(TraceBuilder{}, 2), {});
  ra::compare::AuditFolderCheck folder;
  folder.folder = "out";
  folder.audit_id = "00112233445566778899aabbccddeeff";
  folder.planned_runs = 3;
  folder.runs = {0, 1};
  folder.shards = 3;
  folder.missing_runs = {{2, "no trace run-002.trace.jsonl", 2}};
  folder.shard_states = {{0, {0}, {}, "", {"node-a"}},
                         {1, {1}, {}, "", {"node-b"}},
                         {2, {2}, {2}, "pid 9 on node-c", {}}};
  r.sources.audit_folders = {folder};
  const std::string html = ra::report::render_html(r);
  CHECK(count_of(html,
                 "<div class=\"banner none\">INCOMPLETE AUDIT (2 of 3 planned runs; the "
                 "verdict is over these only): BITWISE IDENTICAL") == 1);
  CHECK(count_of(html, "3 shards; ran on 2 host(s): node-a: shard(s) 0; node-b: shard(s) 1") == 1);
  CHECK(count_of(html, "shard 2/3 unfinished: run(s) 2 missing; still running (pid 9 on node-c)") ==
        1);
  CHECK(count_of(html, "missing run 2 (shard 2/3): no trace run-002.trace.jsonl") == 1);
}

TEST_CASE("names from specs and traces cannot inject markup into the HTML report",
          "[report][html]") {
  TraceBuilder b;
  b.spec_name = "</title><script>alert(1)</script>";
  b.params = {"<img src=x onerror=alert(2)>", "a\"b'c", "dense_1.weight"};
  std::vector<Trace> traces = runs_of(b, 2);
  ra::test::diverge(traces[1], 1, 0);
  const std::string html = ra::report::render_html(ra::compare::compare_traces(traces, {}));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("&lt;img src=x onerror=alert(2)&gt;") != std::string::npos);
  CHECK(html.find("a&quot;b&#39;c") != std::string::npos);
  CHECK(count_of(html, "<title>") == 1);
}

TEST_CASE("html_escaped escapes markup and control characters", "[report][html]") {
  using ra::report::svg::html_escaped;
  CHECK(html_escaped("<a href=\"x\">&'</a>") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  CHECK(html_escaped("line\nbreak\x1b[2K") == "line\\nbreak\\x1b[2K");
  CHECK(ra::report::svg::html_lines_escaped("a<b\nc\x01") == "a&lt;b\nc\\x01");
}

TEST_CASE("plots reduce long series per pixel, keeping each column's extremes", "[report][html]") {
  std::vector<double> x, y;
  for (int i = 0; i < 10000; ++i) {
    x.push_back(i);
    y.push_back(i == 5000 ? 100.0 : (i % 2 ? 1.0 : -1.0));
  }
  ra::report::svg::reduce_per_pixel(x, y, 0, 9999, 500);
  CHECK(x.size() <= 1000);
  CHECK(*std::max_element(y.begin(), y.end()) == 100.0);  // a spike of one step stays
  CHECK(*std::min_element(y.begin(), y.end()) == -1.0);
  CHECK(std::is_sorted(x.begin(), x.end()));
  std::vector<double> short_x{0, 1, 2}, short_y{3, 4, 5};
  ra::report::svg::reduce_per_pixel(short_x, short_y, 0, 2, 500);
  CHECK(short_x.size() == 3);
}

TEST_CASE("axis ticks are round numbers inside the range", "[report][html]") {
  using ra::report::svg::ticks;
  CHECK(ticks(0, 100, 5, false) == std::vector<double>{0, 20, 40, 60, 80, 100});
  CHECK(ticks(1e-7, 1e-3, 8, true) == std::vector<double>{1e-7, 1e-6, 1e-5, 1e-4, 1e-3});
  CHECK(ticks(1, 2, 8, false, true) == std::vector<double>{1, 2});
}

// The large audit: 10,000 steps, about 20 tensors per step, 10 runs, differing in a
// pattern that defeats run-length drawing (every other step). The page must stay under 5 MB;
// the time to render it is measured by scripts/bench-html, not here.
TEST_CASE("a large audit's page stays under 5 MB", "[report][html]") {
  TraceBuilder b;
  b.steps = 10000;
  b.steps_per_epoch = 1000;
  b.params = {"c0.w", "c0.b", "c1.w", "c1.b", "d0.w", "d0.b", "d1.w", "d1.b"};
  std::vector<Trace> traces = runs_of(b, 10);
  for (int run = 1; run < 10; ++run) {
    for (auto& step : traces[std::size_t(run)].steps) {
      if ((step.step + run) % 2 == 0) step.loss_bits ^= 1u << (run % 20);
      if (step.step % 3 == 0) step.grads[std::size_t(run) % 8].low ^= 1;
    }
  }
  const auto result = ra::compare::compare_traces(traces, {});
  REQUIRE(result.growth.steps.rows.size() == 21);
  const std::string html = ra::report::render_html(result);
  INFO("page size " << html.size() << " bytes");
  CHECK(html.size() < 5u * 1024 * 1024);
  CHECK(count_of(html, "<svg ") >= 4);
}

TEST_CASE("the page gives the snapshots' sign flips, relative difference and same-sign ULP",
          "[report][html]") {
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 2);
  ra::test::diverge(traces[1], 1, 0);
  ra::compare::ComparisonOptions options;
  // conv2d_0.weight of run 1 at the end: 0.001 became -0.001 (a flip) and 0.5 became 0.5 + 2^-23
  // (2 ulp: floats in [0.5, 1) are 2^-24 apart). Max |d| 0.002 (the flip), largest |value| 0.5
  // (0.5 + 2^-23 to three digits), relative 0.004; the same-sign ULP maximum 2.
  options.load_snapshot = [](int run, const std::string& point,
                             std::vector<std::pair<std::string, ra::Tensor>>& out) {
    out.clear();
    out.emplace_back("conv2d_0.weight", ra::Tensor(ra::Shape{2, 3}, 0.5f));
    out[0].second.data()[0] = 0.001f;
    if (run == 1 && point == "final") {
      out[0].second.data()[0] = -0.001f;
      out[0].second.data()[1] = 0.5f + 0x1p-23f;
    }
    return true;
  };
  const std::string html = ra::report::render_html(ra::compare::compare_traces(traces, options));
  const std::size_t table = position(html, "<h2>Weight differences (snapshots)</h2>");
  CHECK(table < position(html, "<h2>Cost per step</h2>"));
  CHECK(html.find("<tr><td>final</td><td>all 1</td><td>2</td><td>1</td><td>0.002</td><td>0.004"
                  "</td><td>2</td></tr>") != std::string::npos);
  CHECK(html.find("<tr><td>initial</td><td>all 1</td><td>0</td><td>0</td><td>0</td><td>0</td>"
                  "<td>0</td></tr>") != std::string::npos);
  CHECK(html.find("Sign flips: elements positive in one run and negative in the other") !=
        std::string::npos);
}
