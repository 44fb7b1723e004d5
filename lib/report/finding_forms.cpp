// One finding in text and HTML (report/finding_forms.h).
#include "report/finding_forms.h"

#include <algorithm>

#include "core/printable.h"
#include "report/markup.h"
#include "report/svg_plot.h"

namespace ra::report {
namespace {

using compare::CheckOutcome;
using compare::Finding;

// Columns padded to their widest cell, two spaces apart.
std::string aligned(const compare::FindingTable& t) {
  if (t.rows.empty()) return "";
  std::vector<std::size_t> width(t.columns.size(), 0);
  const auto widen = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  widen(t.columns);
  for (const auto& row : t.rows) widen(row);
  const auto line = [&](const std::vector<std::string>& row) {
    std::string out = "   ";
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      out += " " + row[i] +
             (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 1, ' ') : std::string());
    }
    return out + "\n";
  };
  std::string out = line(t.columns);
  for (const auto& row : t.rows) out += line(row);
  return out;
}

std::string html_cell(const std::string& tag, const std::string& text) {
  return "<" + tag + ">" + with_entities(printable(text)) + "</" + tag + ">";
}

std::string html_table(const compare::FindingTable& t) {
  if (t.rows.empty()) return "";
  std::string out = "<table>\n<tr>";
  for (const std::string& c : t.columns) out += html_cell("th", c);
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const std::string& c : row) out += html_cell("td", c);
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string html_plot(const compare::FindingPlot& p) {
  if (p.curves.empty()) return "";
  svg::LinePlot plot;
  plot.title = p.title;
  plot.x_label = p.x_label;
  plot.y_label = p.y_label;
  plot.log_y = p.log_y;
  plot.integer_x = true;
  for (const compare::FindingCurve& c : p.curves) plot.series.push_back({c.label, c.x, c.y});
  plot.marker_x = p.marker_x;
  plot.marker_label = p.marker_label;
  return svg::line_plot(plot) + "\n";
}

}  // namespace

std::string finding_html(const Finding& f) {
  // The audit page's colours: red only for a failure; an inconclusive finding, like a verdict
  // not reached, is grey (its exit code 6 fails a gate all the same).
  const std::string cls = f.outcome == CheckOutcome::passed    ? "ok"
                          : f.outcome == CheckOutcome::allowed ? "allowed"
                          : f.outcome == CheckOutcome::failed  ? "diverged"
                                                               : "none";
  std::string out = "<h2>" + with_entities(printable(f.name)) + "</h2>\n<div class=\"banner " +
                    cls + "\">" + with_entities(printable(f.summary)) + "</div>\n<ul>\n";
  for (const std::string& d : f.details) out += html_cell("li", d) + "\n";
  out += "</ul>\n" + html_plot(f.plot) + html_table(f.table);
  for (const std::string& s : f.next_steps) out += "<p>Next: " + html_cell("code", s) + "</p>\n";
  return out;
}

bool finding_fails(const Finding& f) {
  return f.outcome == CheckOutcome::failed || f.outcome == CheckOutcome::inconclusive;
}

std::string finding_text(const Finding& f) {
  std::string out = "\n";
  const auto line = [&](const std::string& text) { out += printable(text) + "\n"; };
  line(f.name + ": " + f.summary);
  for (const std::string& d : f.details) line("  " + d);
  compare::FindingTable table = f.table;
  for (std::string& c : table.columns) c = printable(c);
  for (auto& row : table.rows) {
    for (std::string& c : row) c = printable(c);
  }
  out += aligned(table);
  for (const std::string& s : f.next_steps) line("next step: " + s);
  return out;
}

}  // namespace ra::report
