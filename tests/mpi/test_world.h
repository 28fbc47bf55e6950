#pragma once
// The communicator of the process's launch (mpirun, srun, stylegan2_launch; a plain run is a world
// of one) for gtest binaries built with sg2_add_world_test; world_main.cpp starts it.

#include "sg2/distributed/session.h"

namespace sg2::test {

dist::Communicator& world();

}  // namespace sg2::test
