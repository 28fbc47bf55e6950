// Stub for builds without MPI: the MPI launch and backend report how to get them.
#include "backends.h"

#include "sg2/core/error.h"

namespace sg2::dist {

namespace {
constexpr const char* kRebuild =
    "this build has no MPI (install libopenmpi-dev openmpi-bin and reconfigure with -DSG2_WITH_MPI=ON)";
}

bool mpi_compiled() { return false; }
std::string mpi_library_version() { return "none"; }
World mpi_init_world() { SG2_FAIL("launched by mpirun/srun, but {}", kRebuild); }
void mpi_finalize() {}
void mpi_abort_world(int) noexcept {}
std::unique_ptr<Communicator> make_mpi_communicator(const World&, double) { SG2_FAIL("dist.backend = mpi, but {}", kRebuild); }

}  // namespace sg2::dist
