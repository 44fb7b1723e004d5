#pragma once
// The markup characters of XML and HTML as entities: & < > " ' (the apostrophe as &#39;, which
// both read). For text already made printable (core/printable.h): the JUnit report
// (report/junit.h) and the HTML report (report/svg_plot.h) escape names with it.
#include <string>
#include <string_view>

namespace ra::report {

inline std::string with_entities(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ra::report
