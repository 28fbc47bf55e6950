// Restarts the program with OpenBLAS's Haswell kernels where the loaded OpenBLAS is one whose AVX-512
// kernels are known to compute float32 products outside the parity tolerance (system.h).
#include "sg2/core/system.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace sg2 {

namespace {

const char* openblas_string(const char* function) {
  using Query = char* (*)();
  auto query = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, function));
  return query == nullptr ? nullptr : query();
}

bool contains(const char* text, const char* part) { return text != nullptr && std::strstr(text, part) != nullptr; }

// Before main(): the same program, arguments and environment, plus OPENBLAS_CORETYPE=Haswell, which
// OpenBLAS reads when it loads. Where anything is missing it goes on as it is.
void restart_with_safe_openblas_kernels() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || !openblas_kernels_known_inexact()) return;
  const std::vector<std::string> arguments = own_command_line();
  if (arguments.empty()) return;
  // The program's own path, not /proc/self/exe: its name (ps, pkill -x) stays the program's.
  const std::string program = own_executable();
  if (program.empty()) return;
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  if (setenv("OPENBLAS_CORETYPE", "Haswell", 1) != 0) return;
  execv(program.c_str(), argv.data());
  unsetenv("OPENBLAS_CORETYPE");  // execv failed: carry on with the kernels loaded
}

}  // namespace

}  // namespace sg2

// Referenced by every program's link (core/CMakeLists.txt: --undefined), so that this file's static
// initialisation runs in each of them.
extern "C" {
extern const bool sg2_openblas_guard_installed;
}
const bool sg2_openblas_guard_installed = (sg2::restart_with_safe_openblas_kernels(), true);

namespace sg2 {

bool openblas_kernels_known_inexact() {
  const char* core = openblas_string("openblas_get_corename");
  const char* config = openblas_string("openblas_get_config");
  const bool avx512_kernels = contains(core, "SkylakeX") || contains(core, "skylakex") ||
                              contains(core, "Cooperlake") || contains(core, "cooperlake");
  return avx512_kernels && contains(config, "OpenBLAS 0.3.21");
}

}  // namespace sg2
