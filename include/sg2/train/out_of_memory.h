#pragma once
// Telling allocation failures from other errors, for the commands' error paths and the batch probe.

#include <exception>
#include <string>

namespace sg2::train {

// An allocation failure, of the host (std::bad_alloc, LibTorch's CPU allocator) or a device.
bool is_out_of_memory(const std::exception& e);

// That, or a CUDA library's set-up failure that a nearly full GPU causes but other things can too:
// for the batch probe, which tries a smaller batch and quotes the message, not for advice to users.
bool may_be_out_of_memory(const std::exception& e);

// The exception's message without LibTorch's backtrace.
std::string message_of(const std::exception& e);

}  // namespace sg2::train
