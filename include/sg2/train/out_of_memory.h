#pragma once
// Telling allocation failures from other errors, for the commands' error paths and the batch probe.

#include <exception>
#include <string>

namespace sg2::train {

// An allocation failure, of the host (std::bad_alloc, LibTorch's CPU allocator) or a device.
bool is_out_of_memory(const std::exception& e);

// The exception's message without LibTorch's backtrace.
std::string message_of(const std::exception& e);

}  // namespace sg2::train
