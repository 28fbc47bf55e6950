#pragma once
// Errors: every failure a user can cause (bad config, bad file, impossible shape) throws sg2::Error
// with a message that names the key, file, record or rank and says what was expected.

#include <fmt/format.h>
#include <fmt/ranges.h>  // containers and tensor sizes format as [a, b, c]

#include <stdexcept>
#include <string>

namespace sg2 {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The first line of a message (library errors append backtraces and source excerpts).
std::string first_line(const std::string& text);
// An Error's message without the " [file.cpp:123]" that SG2_CHECK appends, to quote it in another.
std::string without_location(const std::string& message);

namespace detail {
[[noreturn]] void fail_check(const char* expression, const char* file, int line, const std::string& message);
// "MPI error on host H rank R: CALL failed: TEXT"
std::string library_error(const char* library, int rank, const char* call, const std::string& text);
}  // namespace detail

}  // namespace sg2

// SG2_CHECK(condition, "format {}", args...): throws sg2::Error with the message and the location.
#define SG2_CHECK(condition, ...)                                                          \
  do {                                                                                     \
    if (!(condition)) {                                                                    \
      ::sg2::detail::fail_check(#condition, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
    }                                                                                      \
  } while (0)

// SG2_CHECK_STATUS("MPI", rank, MPI_Barrier(comm), MPI_SUCCESS, describe): calls a C library function
// that returns a status; any status but `ok` throws "MPI error on host H rank R: MPI_Barrier(comm)
// failed: <describe(status)>". The one check of every library's status codes (MPI, NCCL, CUDA).
#define SG2_CHECK_STATUS(library, rank, call, ok, describe)                                               \
  do {                                                                                                    \
    const auto _status = (call);                                                                          \
    if (_status != (ok)) {                                                                                \
      ::sg2::detail::fail_check(nullptr, __FILE__, __LINE__,                                              \
                                ::sg2::detail::library_error(library, rank, #call, describe(_status)));  \
    }                                                                                                     \
  } while (0)

// SG2_FAIL("format {}", args...): throws sg2::Error unconditionally.
#define SG2_FAIL(...) ::sg2::detail::fail_check(nullptr, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
