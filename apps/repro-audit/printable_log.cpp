#include "printable_log.h"

#include <spdlog/pattern_formatter.h>

#include "core/printable.h"

namespace ra::app {
namespace {

class PrintableFormatter final : public spdlog::formatter {
 public:
  explicit PrintableFormatter(std::unique_ptr<spdlog::formatter> inner)
      : inner_(std::move(inner)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string escaped = printable({msg.payload.data(), msg.payload.size()});
    spdlog::details::log_msg safe = msg;
    safe.payload = spdlog::string_view_t(escaped.data(), escaped.size());
    inner_->format(safe, dest);
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<PrintableFormatter>(inner_->clone());
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

}  // namespace

std::unique_ptr<spdlog::formatter> make_printable_formatter(const std::string& pattern) {
  return std::make_unique<PrintableFormatter>(std::make_unique<spdlog::pattern_formatter>(pattern));
}

}  // namespace ra::app
