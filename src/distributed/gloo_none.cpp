// Stub for builds whose LibTorch comes without Gloo headers.
#include "backends.h"

#include "sg2/core/error.h"

namespace sg2::dist {

std::unique_ptr<Communicator> make_gloo_communicator(const World& world, const std::shared_ptr<Rendezvous>&, double) {
  SG2_FAIL("rank {}: the gloo backend is not in this build (install libgloo-dev and reconfigure), "
           "launch with mpirun instead, or set dist.backend", world.rank);
}

}  // namespace sg2::dist
