# Finds every dependency once and defines the imported targets the modules link against.
# Missing required packages stop the configure step with the Debian package that provides them.

include(CheckCXXSourceCompiles)

# <ATen/ATen.h> precompiled once for every target that uses LibTorch (cmake/Sg2Helpers.cmake).
option(SG2_PRECOMPILE_TORCH "Precompile <ATen/ATen.h> once for every target that uses LibTorch" ON)

# Unity builds, on unless the cache says otherwise: each target's sources compiled in batches of
# CMAKE_UNITY_BUILD_BATCH_SIZE (CMake's default, 8), one translation unit per batch, so the headers
# and the templates they instantiate are compiled once per batch instead of once per file. Files
# with options of their own (the -O3 CPU kernels, the file that carries the commit) and CUDA
# sources are compiled alone. -DCMAKE_UNITY_BUILD=OFF compiles every file alone: quicker after
# editing one file, and a check that every file includes what it uses.
option(CMAKE_UNITY_BUILD "Compile each target's C++ sources in batches (CMake's unity builds)" ON)

# ccache caches translation units that use the precompiled header only when told that the
# header's definitions and timestamps are the build's business (ccache's "PRECOMPILED HEADERS").
find_program(SG2_CCACHE ccache)
if(SG2_CCACHE)
  set(_sg2_ccache ${SG2_CCACHE})
  if(SG2_PRECOMPILE_TORCH)
    set(_sg2_ccache ${CMAKE_COMMAND} -E env
        CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime ${SG2_CCACHE})
  endif()
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_sg2_ccache})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${SG2_CCACHE})
endif()

# sg2_require(<find_package args> DEBIAN <package>): find_package with a clear message.
macro(sg2_require name)
  cmake_parse_arguments(_req "" "DEBIAN" "" ${ARGN})
  find_package(${name} ${_req_UNPARSED_ARGUMENTS} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "Missing dependency ${name}: install the Debian package '${_req_DEBIAN}' "
      "(scripts/setup.sh installs all of them), or point CMAKE_PREFIX_PATH at another installation.")
  endif()
endmacro()

sg2_require(Threads DEBIAN libc6-dev)
# Before Torch: a pip wheel's Caffe2Config defines protobuf::libprotobuf as an empty alias when no
# such target exists yet, which would leave our TFRecord messages unlinked.
sg2_require(Protobuf DEBIAN "libprotobuf-dev and protobuf-compiler")
# A CUDA LibTorch adds nvcc code-generation flags for TORCH_CUDA_ARCH_LIST, by default every
# architecture it knows (some of which this nvcc no longer compiles): Turing to Hopper unless set,
# the architectures of the kernels below that every nvcc from CUDA 11.8 to 13 compiles.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "7.5;8.0;8.6;8.9;9.0")
endif()
sg2_require(Torch DEBIAN libtorch-dev)
# at::parallel_for is a header template: without OpenMP in our own translation units it runs serially.
sg2_require(OpenMP DEBIAN libgomp1 COMPONENTS CXX)
sg2_require(yaml-cpp DEBIAN libyaml-cpp-dev)
sg2_require(fmt DEBIAN libfmt-dev)
sg2_require(spdlog DEBIAN libspdlog-dev)
sg2_require(CLI11 DEBIAN libcli11-dev)
sg2_require(nlohmann_json DEBIAN nlohmann-json3-dev)
sg2_require(PNG DEBIAN libpng-dev)
sg2_require(ZLIB DEBIAN zlib1g-dev)
sg2_require(JPEG DEBIAN libjpeg62-turbo-dev)
if(NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "protoc not found: install the Debian package protobuf-compiler")
endif()

# A LibTorch from a pip wheel (scripts/torch_wheel.sh), possibly beside Debian's:
# - TorchConfig's find_library(c10) searches the system first and may take Debian's libc10.so (another
#   version): use the one beside libtorch;
# - the wheel's include directory also holds third-party headers (fmt 12, protobuf, ...) that would
#   shadow the system ones our code and spdlog are built with: expose only LibTorch's own directories.
# - the wheel's libtorch.so exports parts of a newer libstdc++ that it links statically (e.g.
#   std::filesystem::remove_all); listed before libstdc++ they would be the ones our code calls (and
#   crash): every executable names libstdc++ first.
set(SG2_TORCH_FROM_WHEEL OFF)
if(EXISTS "${TORCH_INSTALL_PREFIX}/__init__.py")  # the prefix is the Python package torch/
  set(SG2_TORCH_FROM_WHEEL ON)
  add_link_options("LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
  set(_sg2_wheel_c10 "${TORCH_INSTALL_PREFIX}/lib/libc10.so")
  list(TRANSFORM TORCH_LIBRARIES REPLACE "^${c10_LIBRARY}$" "${_sg2_wheel_c10}")
  set(_sg2_torch_include "${CMAKE_BINARY_DIR}/torch-include")
  file(MAKE_DIRECTORY "${_sg2_torch_include}")
  foreach(_dir ATen c10 torch caffe2 kineto)  # kineto: its ActivityType values (src/cli/kernel_profile.cpp)
    if(EXISTS "${TORCH_INSTALL_PREFIX}/include/${_dir}")
      file(CREATE_LINK "${TORCH_INSTALL_PREFIX}/include/${_dir}" "${_sg2_torch_include}/${_dir}" SYMBOLIC)
    endif()
  endforeach()
  set(TORCH_INCLUDE_DIRS "${_sg2_torch_include};${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include")
  foreach(_target torch c10 c10_cuda torch_cpu torch_cuda)
    if(TARGET ${_target})
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}")
    endif()
  endforeach()
endif()

# LibTorch as one interface target. TORCH_CXX_FLAGS carries the ABI define.
add_library(sg2_torch INTERFACE)
target_link_libraries(sg2_torch INTERFACE ${TORCH_LIBRARIES} OpenMP::OpenMP_CXX)
separate_arguments(_sg2_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(sg2_torch INTERFACE ${_sg2_torch_flags})
set_target_properties(sg2_torch PROPERTIES EXPORT_NAME torch)
install(TARGETS sg2_torch EXPORT stylegan2-cpp-targets)
if(TARGET torch_cuda OR TARGET c10_cuda)
  set(SG2_TORCH_HAS_CUDA ON)
else()
  set(SG2_TORCH_HAS_CUDA OFF)
endif()

# yaml-cpp 0.7 names its target yaml-cpp; newer releases add yaml-cpp::yaml-cpp.
if(TARGET yaml-cpp::yaml-cpp)
  set(SG2_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(SG2_YAML_TARGET yaml-cpp)
endif()

# sg2_resolve_switch(VAR FOUND WHAT): turns AUTO/ON/OFF plus a detection result into ON/OFF.
function(sg2_resolve_switch var found what)
  string(TOUPPER "${${var}}" _mode)
  if(_mode STREQUAL "OFF")
    set(${var}_ENABLED OFF PARENT_SCOPE)
  elseif(found)
    set(${var}_ENABLED ON PARENT_SCOPE)
  elseif(_mode STREQUAL "ON")
    message(FATAL_ERROR "${var}=ON but ${what} was not found.")
  else()
    set(${var}_ENABLED OFF PARENT_SCOPE)
  endif()
endfunction()

# CUDA toolkit: compiled wherever it is found (also on CPU-only machines) so CUDA code cannot rot.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
sg2_resolve_switch(SG2_WITH_CUDA "${CUDAToolkit_FOUND}" "the CUDA toolkit (set CUDAToolkit_ROOT)")

# The CUDA kernels (src/ops/cuda) need both the toolkit's compiler and a LibTorch with CUDA. They are
# built as machine code for Volta (V100), Turing (T4, RTX 20x0), Ampere (A100, A10, RTX 30x0), Ada
# (L4, L40, RTX 40x0) and Hopper (H100, H200), and as Hopper's PTX, which newer GPUs compile when
# they load it, unless SG2_CUDA_ARCHITECTURES says otherwise (CMAKE_CUDA_ARCHITECTURES' form, e.g.
# "86-real;90"); an architecture this nvcc no longer compiles (CUDA 13 dropped Volta) is left out
# with a note. A GPU with no kernel image runs the reference ops (ops/cuda_architectures.h).
set(SG2_CUDA_ARCHITECTURES auto CACHE STRING
    "Architectures of the CUDA kernels, as CMAKE_CUDA_ARCHITECTURES (auto: sm_70 to sm_90 and compute_90 PTX)")
function(sg2_default_cuda_architectures out)
  execute_process(COMMAND "${CUDAToolkit_NVCC_EXECUTABLE}" --list-gpu-arch OUTPUT_VARIABLE _known
                  RESULT_VARIABLE _status ERROR_QUIET)
  set(_architectures "")
  set(_dropped "")
  foreach(_arch 70 75 80 86 89)
    if(_status EQUAL 0 AND NOT _known MATCHES "compute_${_arch}")
      list(APPEND _dropped "sm_${_arch}")
    else()
      list(APPEND _architectures "${_arch}-real")
    endif()
  endforeach()
  list(APPEND _architectures 90)  # machine code and PTX
  if(_dropped)
    message(STATUS "CUDA kernels: nvcc ${CUDAToolkit_VERSION} no longer compiles for ${_dropped}: such GPUs run "
                   "the reference ops")
  endif()
  set(${out} "${_architectures}" PARENT_SCOPE)
endfunction()
set(SG2_CUDA_KERNELS OFF)
if(SG2_WITH_CUDA_ENABLED AND SG2_TORCH_HAS_CUDA)
  set(SG2_CUDA_KERNELS ON)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
  endif()
  if(SG2_CUDA_ARCHITECTURES STREQUAL "auto")
    sg2_default_cuda_architectures(CMAKE_CUDA_ARCHITECTURES)
  else()
    foreach(_arch IN LISTS SG2_CUDA_ARCHITECTURES)
      if(NOT _arch MATCHES "^[0-9]+(-real|-virtual)?$")
        message(FATAL_ERROR "SG2_CUDA_ARCHITECTURES: '${_arch}' is not NUMBER, NUMBER-real or NUMBER-virtual "
                            "(e.g. \"86-real;90\"; native, all and arch-specific forms are not taken)")
      endif()
    endforeach()
    set(CMAKE_CUDA_ARCHITECTURES "${SG2_CUDA_ARCHITECTURES}")
  endif()
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # the one libcudart LibTorch loads, not a second static copy
  enable_language(CUDA)
endif()

find_package(NCCL QUIET)
sg2_resolve_switch(SG2_WITH_NCCL "${NCCL_FOUND}" "NCCL (nccl.h and libnccl; set NCCL_ROOT)")
if(SG2_WITH_NCCL_ENABLED AND NOT SG2_WITH_CUDA_ENABLED)
  message(FATAL_ERROR "SG2_WITH_NCCL needs SG2_WITH_CUDA.")
endif()

find_package(MPI QUIET COMPONENTS CXX)
sg2_resolve_switch(SG2_WITH_MPI "${MPI_CXX_FOUND}" "MPI (Debian: libopenmpi-dev openmpi-bin)")

# tcmalloc (gperftools) for the executables: LibTorch allocates and frees many large tensors per
# step; glibc returns them to the kernel each time (page faults), tcmalloc keeps them.
set(SG2_WITH_TCMALLOC AUTO CACHE STRING "Link the executables with tcmalloc (AUTO|ON|OFF)")
find_library(SG2_TCMALLOC_LIBRARY NAMES tcmalloc_minimal tcmalloc)
sg2_resolve_switch(SG2_WITH_TCMALLOC "${SG2_TCMALLOC_LIBRARY}" "tcmalloc (Debian: libgoogle-perftools-dev)")

function(sg2_print_summary)
  message(STATUS "StyleGAN2-cpp configuration:")
  message(STATUS "  build type        ${CMAKE_BUILD_TYPE}")
  message(STATUS "  LibTorch          ${Torch_VERSION} (${TORCH_LIBRARIES}) CUDA in LibTorch: ${SG2_TORCH_HAS_CUDA}, "
                 "pip wheel: ${SG2_TORCH_FROM_WHEEL}")
  message(STATUS "  CUDA toolkit      ${SG2_WITH_CUDA_ENABLED} ${CUDAToolkit_VERSION}, CUDA kernels: ${SG2_CUDA_KERNELS} "
                 "(${CMAKE_CUDA_ARCHITECTURES})")
  message(STATUS "  NCCL              ${SG2_WITH_NCCL_ENABLED} ${NCCL_VERSION}")
  message(STATUS "  MPI               ${SG2_WITH_MPI_ENABLED} ${MPI_CXX_VERSION}")
  message(STATUS "  Gloo              ${SG2_GLOO_ENABLED}")
  message(STATUS "  tcmalloc          ${SG2_WITH_TCMALLOC_ENABLED} ${SG2_TCMALLOC_LIBRARY}")
  message(STATUS "  tests             ${SG2_BUILD_TESTS}")
  message(STATUS "  ccache            ${SG2_CCACHE}")
  message(STATUS "  precompiled ATen  ${SG2_PRECOMPILE_TORCH}")
  message(STATUS "  unity build       ${CMAKE_UNITY_BUILD}")
endfunction()
