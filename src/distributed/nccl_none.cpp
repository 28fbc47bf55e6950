// Stub for builds without the CUDA toolkit or NCCL.
#include "backends.h"

#include "sg2/core/error.h"

namespace sg2::dist {

std::string nccl_library_version() { return "none"; }

std::unique_ptr<Communicator> make_nccl_communicator(const World& world, const at::Device&, const ShareBytes&,
                                                     double) {
  SG2_FAIL("rank {}: dist.backend = nccl, but this build has no NCCL (reconfigure with the CUDA toolkit and "
           "-DSG2_WITH_NCCL=ON; NCCL_ROOT points at another installation)", world.rank);
}

}  // namespace sg2::dist
