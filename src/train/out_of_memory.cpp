#include "sg2/train/out_of_memory.h"

#include <c10/util/Exception.h>

#include <new>

namespace sg2::train {

std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  const std::string message = message_of(e);
  return message.find("can't allocate memory") != std::string::npos ||
         message.find("out of memory") != std::string::npos;
}

}  // namespace sg2::train
