// main() of the multi-rank gtest binaries: starts the session (SG2_TEST_BACKEND picks a backend,
// SG2_TEST_DEVICE the device, e.g. cuda for NCCL in scripts/gpu/run.sh), runs the tests on every
// rank, and fails the job on every rank when any rank failed.
#include "test_world.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace sg2::test {

namespace {
dist::Communicator* g_world = nullptr;  // set by main()
}

dist::Communicator& world() { return *g_world; }

}  // namespace sg2::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  sg2::dist::CommunicatorOptions options;
  if (const char* backend = std::getenv("SG2_TEST_BACKEND")) {
    options.backend = sg2::parse_enum(sg2::dist::kBackendNames, backend, "SG2_TEST_BACKEND");
  }
  if (const char* device = std::getenv("SG2_TEST_DEVICE")) options.device = at::Device(device);
  auto session = sg2::dist::Session::start(options);
  sg2::test::g_world = &session->comm();
  const int failed = RUN_ALL_TESTS();
  return session->comm().any(failed != 0) ? 1 : 0;
}
