#include "sg2/core/error.h"

#include "sg2/core/system.h"

#include <cstring>

namespace sg2::detail {

void fail_check(const char* expression, const char* file, int line, const std::string& message) {
  const char* base = std::strrchr(file, '/');
  std::string where = fmt::format("{}:{}", base ? base + 1 : file, line);
  (void)expression;  // the message says what was expected; the location is for developers
  throw Error(fmt::format("{} [{}]", message, where));
}

std::string library_error(const char* library, int rank, const char* call, const std::string& text) {
  return fmt::format("{} error on host {} rank {}: {} failed: {}", library, hostname(), rank, call, text);
}

}  // namespace sg2::detail

namespace sg2 {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace sg2

namespace sg2 {

std::string without_location(const std::string& message) {
  const size_t open = message.rfind(" [");
  if (open == std::string::npos || message.back() != ']' || message.find(':', open) == std::string::npos) return message;
  return message.substr(0, open);
}

}  // namespace sg2
