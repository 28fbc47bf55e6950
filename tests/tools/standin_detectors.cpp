// standin_detectors inception|vgg16 OUT.pt [SEED]: writes a random-weight TorchScript stand-in with
// the calling convention of NVIDIA's inception-2015-12-05.pt or vgg16.pt (support/standin_detectors.h),
// for end-to-end tests of the metrics that call them.
#include "standin_detectors.h"

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const std::string kind = argc >= 3 ? argv[1] : "";
  if (kind != "inception" && kind != "vgg16") {
    std::cerr << "usage: standin_detectors inception|vgg16 OUT.pt [SEED]\n";
    return 2;
  }
  const uint64_t seed = argc >= 4 ? std::stoull(argv[3]) : 1;
  if (kind == "inception") {
    sg2::test::write_standin_inception(argv[2], seed);
  } else {
    sg2::test::write_standin_vgg16(argv[2], seed);
  }
  return 0;
}
