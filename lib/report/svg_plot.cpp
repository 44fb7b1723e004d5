// Inline SVG plots (report/svg_plot.h).
#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/printable.h"
#include "report/markup.h"

namespace ra::report::svg {
namespace {

// Ten colours that stay apart for the usual kinds of colour blindness and in grey print (the
// Tableau 10 palette); runs past ten reuse them.
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

constexpr int kLeft = 78, kRight = 16, kTop = 48, kBottom = 46;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string text(double x, double y, const std::string& content, const std::string& extra = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + extra + ">" + html_escaped(content) +
         "</text>";
}

// The plot's frame: title, legend entries (coloured squares), axes labels.
std::string frame(int width, int height, const std::string& title,
                  const std::vector<std::string>& legend, const std::string& x_label,
                  const std::string& y_label) {
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" +
                    std::to_string(width) + "\" height=\"" + std::to_string(height) +
                    "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
                    "\" role=\"img\" aria-label=\"" + html_escaped(title) + "\">";
  out += text(kLeft, 18, title, " class=\"title\"");
  double x = kLeft;
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const std::string colour = kColours[i % std::size(kColours)];
    out +=
        "<rect x=\"" + px(x) + "\" y=\"28\" width=\"10\" height=\"10\" fill=\"" + colour + "\"/>";
    out += text(x + 14, 37, legend[i], " class=\"legend\"");
    x += 24 + 7.0 * static_cast<double>(legend[i].size());
  }
  out += text(kLeft + (width - kLeft - kRight) / 2.0, height - 8, x_label,
              " text-anchor=\"middle\" class=\"axis-label\"");
  const double mid = kTop + (height - kTop - kBottom) / 2.0;
  out += text(
      16, mid, y_label,
      " text-anchor=\"middle\" class=\"axis-label\" transform=\"rotate(-90 16 " + px(mid) + ")\"");
  return out;
}

struct Scale {
  double low, high, from, to;
  bool log = false;
  double operator()(double v) const {
    if (log) {
      v = std::log10(v);
      const double l = std::log10(low), h = std::log10(high);
      return from + (v - l) / (h - l) * (to - from);
    }
    return from + (v - low) / (high - low) * (to - from);
  }
};

// Axis lines, grid and tick labels of a plot area.
std::string axes(const Scale& x, const Scale& y, const std::vector<double>& x_ticks,
                 const std::vector<double>& y_ticks) {
  std::string out = "<g class=\"axes\">";
  for (double t : y_ticks) {
    const double py = y(t);
    out += "<line x1=\"" + px(x.from) + "\" x2=\"" + px(x.to) + "\" y1=\"" + px(py) + "\" y2=\"" +
           px(py) + "\" class=\"grid\"/>";
    out += text(x.from - 6, py + 4, num(t), " text-anchor=\"end\"");
  }
  for (double t : x_ticks) {
    const double pxx = x(t);
    out += "<line x1=\"" + px(pxx) + "\" x2=\"" + px(pxx) + "\" y1=\"" + px(y.from) + "\" y2=\"" +
           px(y.from + 5) + "\"/>";
    out += text(pxx, y.from + 18, num(t), " text-anchor=\"middle\"");
  }
  out += "<line x1=\"" + px(x.from) + "\" x2=\"" + px(x.to) + "\" y1=\"" + px(y.from) + "\" y2=\"" +
         px(y.from) + "\"/>";
  out += "<line x1=\"" + px(x.from) + "\" x2=\"" + px(x.from) + "\" y1=\"" + px(y.from) +
         "\" y2=\"" + px(y.to) + "\"/>";
  return out + "</g>";
}

// The range of the plotted values, padded so that a flat series is not on the frame.
std::pair<double, double> y_range(const LinePlot& plot) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (const Series& s : plot.series) {
    for (double v : s.y) {
      if (!std::isfinite(v) || (plot.log_y && v <= 0)) continue;
      low = std::min(low, v);
      high = std::max(high, v);
    }
  }
  if (!std::isfinite(low)) return {plot.log_y ? 1e-8 : 0.0, 1.0};
  if (plot.integer_y && !plot.log_y) return {std::min(low, 0.0), std::max(high, 1.0) * 1.05};
  if (plot.log_y)
    return {std::pow(10, std::floor(std::log10(low))),
            std::pow(10, std::ceil(std::log10(high) + 1e-12))};
  if (high == low) return {low - 1, high + 1};
  const double pad = (high - low) * 0.05;
  return {low - pad, high + pad};
}

}  // namespace

std::string html_escaped(const std::string& raw) {
  return with_entities(printable(raw));
}

std::string html_lines_escaped(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += html_escaped(text.substr(start, end - start));
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

std::vector<double> ticks(double low, double high, int count, bool log, bool integer) {
  std::vector<double> out;
  if (!(high > low)) return {low};
  if (log) {
    for (double e = std::ceil(std::log10(low) - 1e-9); e <= std::log10(high) + 1e-9; ++e) {
      out.push_back(std::pow(10, e));
    }
    // Many decades: every k-th, so labels do not collide.
    const std::size_t k = (out.size() + count - 1) / std::max(1, count);
    std::vector<double> thinned;
    for (std::size_t i = 0; i < out.size(); i += std::max<std::size_t>(1, k)) {
      thinned.push_back(out[i]);
    }
    return thinned;
  }
  const double raw = (high - low) / std::max(1, count);
  const double power = std::pow(10, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  if (integer) step = std::max(1.0, std::round(step));
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step) {
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

void reduce_per_pixel(std::vector<double>& x, std::vector<double>& y, double x_low, double x_high,
                      int columns) {
  if (static_cast<int>(x.size()) <= 2 * columns || !(x_high > x_low)) return;
  std::vector<double> rx, ry;
  std::size_t i = 0;
  while (i < x.size()) {
    const int column = std::clamp(
        static_cast<int>((x[i] - x_low) / (x_high - x_low) * (columns - 1)), 0, columns - 1);
    std::size_t lo = i, hi = i, j = i;
    for (; j < x.size(); ++j) {
      const int c = std::clamp(static_cast<int>((x[j] - x_low) / (x_high - x_low) * (columns - 1)),
                               0, columns - 1);
      if (c != column) break;
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    for (std::size_t k : {std::min(lo, hi), std::max(lo, hi)}) {
      if (rx.empty() || rx.back() != x[k] || ry.back() != y[k]) {
        rx.push_back(x[k]);
        ry.push_back(y[k]);
      }
    }
    i = j;
  }
  x = std::move(rx);
  y = std::move(ry);
}

std::string line_plot(const LinePlot& plot) {
  std::vector<std::string> legend;
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low;
  for (const Series& s : plot.series) {
    legend.push_back(s.label);
    for (double v : s.x) {
      x_low = std::min(x_low, v);
      x_high = std::max(x_high, v);
    }
  }
  if (!std::isfinite(x_low)) x_low = 0, x_high = 1;
  if (x_high == x_low) x_high = x_low + 1;
  const auto [y_low, y_high] = y_range(plot);
  const Scale x{x_low, x_high, double(kLeft), double(plot.width - kRight)};
  const Scale y{y_low, y_high, double(plot.height - kBottom), double(kTop), plot.log_y};
  std::string out = frame(plot.width, plot.height, plot.title, legend, plot.x_label, plot.y_label);
  out += axes(x, y, ticks(x_low, x_high, 8, false, plot.integer_x),
              ticks(y_low, y_high, 5, plot.log_y, plot.integer_y));
  const int columns = plot.width - kLeft - kRight;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    std::vector<double> sx, sy;  // the plottable points
    for (std::size_t k = 0; k < plot.series[i].x.size(); ++k) {
      const double v = plot.series[i].y[k];
      if (!std::isfinite(v) || (plot.log_y && v <= 0)) continue;
      sx.push_back(plot.series[i].x[k]);
      sy.push_back(v);
    }
    reduce_per_pixel(sx, sy, x_low, x_high, columns);
    std::string points;
    for (std::size_t k = 0; k < sx.size(); ++k) {
      points += (k ? " " : "") + px(x(sx[k])) + "," + px(y(sy[k]));
    }
    const std::string colour = kColours[i % std::size(kColours)];
    out += sx.size() == 1 ? "<circle cx=\"" + px(x(sx[0])) + "\" cy=\"" + px(y(sy[0])) +
                                "\" r=\"2.5\" fill=\"" + colour + "\"/>"
                          : "<polyline class=\"series\" fill=\"none\" stroke=\"" + colour +
                                "\" points=\"" + points + "\"/>";
  }
  if (plot.marker_x) {
    const double mx = x(*plot.marker_x);
    out += "<line class=\"marker\" x1=\"" + px(mx) + "\" x2=\"" + px(mx) + "\" y1=\"" + px(y.from) +
           "\" y2=\"" + px(y.to) + "\"/>";
    out += text(mx + 4, y.to + 12, plot.marker_label, " class=\"marker-label\"");
  }
  return out + "</svg>";
}

std::string cell_map(const CellMap& map) {
  constexpr int kRow = 14, kLabel = 190;
  const int height = kTop + kRow * static_cast<int>(map.rows.size()) + kBottom;
  std::string out = frame(map.width, height, map.title, {map.on_label}, map.x_label, "");
  const std::size_t columns = map.cells.empty() ? 0 : map.cells[0].size();
  const double left = kLabel, right = map.width - kRight;
  // More columns than pixels: each pixel column stands for a bin of columns, drawn when any is.
  const std::size_t bins = std::min<std::size_t>(columns, static_cast<std::size_t>(right - left));
  const double per = bins == 0 ? 0 : (right - left) / static_cast<double>(bins);
  const auto bin_of = [&](std::size_t c) { return c * bins / std::max<std::size_t>(1, columns); };
  for (std::size_t r = 0; r < map.rows.size(); ++r) {
    const double top = kTop + kRow * static_cast<double>(r);
    out += text(left - 6, top + kRow - 3, map.rows[r], " text-anchor=\"end\" class=\"row-label\"");
    out += "<rect x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(right - left) +
           "\" height=\"" + std::to_string(kRow - 2) + "\" class=\"cell-off\"/>";
    // Runs of true cells as one rectangle each, at least a pixel wide: a single differing step
    // of 10,000 stays visible.
    std::vector<bool> row(bins, false);
    for (std::size_t c = 0; c < map.cells[r].size(); ++c) {
      if (map.cells[r][c]) row[bin_of(c)] = true;
    }
    for (std::size_t c = 0; c < row.size();) {
      if (!row[c]) {
        ++c;
        continue;
      }
      std::size_t end = c;
      while (end < row.size() && row[end]) ++end;
      out += "<rect x=\"" + px(left + per * static_cast<double>(c)) + "\" y=\"" + px(top) +
             "\" width=\"" + px(std::max(1.0, per * static_cast<double>(end - c))) +
             "\" height=\"" + std::to_string(kRow - 2) + "\" fill=\"" + kColours[0] + "\"/>";
      c = end;
    }
  }
  const double bottom = kTop + kRow * static_cast<double>(map.rows.size());
  if (columns > 0) {
    const double last = static_cast<double>(map.first_column + std::int64_t(columns) - 1);
    for (double t :
         ticks(double(map.first_column), std::max(last, double(map.first_column) + 1), 8, false)) {
      if (t > last) break;
      const double x = left + (right - left) * (t - double(map.first_column) + 0.5) /
                                  static_cast<double>(columns);
      out += text(x, bottom + 14, num(t), " text-anchor=\"middle\"");
    }
  }
  return out + "</svg>";
}

std::string strip_plot(const StripPlot& plot) {
  constexpr int kBand = 34, kLabel = 190;
  const int height = kTop + kBand * static_cast<int>(plot.groups.size()) + kBottom;
  std::vector<std::string> legend;
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (const auto& g : plot.groups) {
    legend.push_back(g.label);
    for (double v : g.values) {
      low = std::min(low, v);
      high = std::max(high, v);
    }
  }
  if (!std::isfinite(low)) low = 0, high = 1;
  if (high == low) low -= 1, high += 1;
  const double pad = (high - low) * 0.05;
  const Scale x{low - pad, high + pad, double(kLabel), double(plot.width - kRight)};
  std::string out = frame(plot.width, height, plot.title, legend, plot.value_label, "");
  const double bottom = kTop + kBand * static_cast<double>(plot.groups.size());
  for (std::size_t i = 0; i < plot.groups.size(); ++i) {
    const double mid = kTop + kBand * (static_cast<double>(i) + 0.5);
    out += text(kLabel - 6, mid + 4, plot.groups[i].label, " text-anchor=\"end\"");
    for (double v : plot.groups[i].values) {
      out += "<circle cx=\"" + px(x(v)) + "\" cy=\"" + px(mid) + "\" r=\"4\" fill=\"" +
             kColours[i % std::size(kColours)] + "\" fill-opacity=\"0.7\"/>";
    }
  }
  for (double t : ticks(low - pad, high + pad, 8, false)) {
    out += text(x(t), bottom + 16, num(t), " text-anchor=\"middle\"");
  }
  out += "<line x1=\"" + px(x.from) + "\" x2=\"" + px(x.to) + "\" y1=\"" + px(bottom) + "\" y2=\"" +
         px(bottom) + "\" stroke=\"#444\"/>";
  return out + "</svg>";
}

}  // namespace ra::report::svg
