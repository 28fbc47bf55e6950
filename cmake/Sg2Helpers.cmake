# Helpers shared by src/, apps/ and tests/.

set(SG2_WARNINGS $<$<COMPILE_LANGUAGE:CXX>:-Wall$<SEMICOLON>-Wextra$<SEMICOLON>-Wno-unused-parameter>)

# sg2_add_module(NAME SOURCES ... DEPS ...): one static library per module (core, data, nn, train),
# installed and exported as stylegan2::NAME (docs/building.md, "Installing").
function(sg2_add_module name)
  cmake_parse_arguments(_mod "" "" "SOURCES;DEPS" ${ARGN})
  add_library(sg2_${name} STATIC ${_mod_SOURCES})
  target_include_directories(sg2_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(sg2_${name} PUBLIC ${_mod_DEPS})
  target_compile_features(sg2_${name} PUBLIC cxx_std_17)  # for the package's consumers too
  target_compile_options(sg2_${name} PRIVATE ${SG2_WARNINGS})
  add_library(sg2::${name} ALIAS sg2_${name})
  set_target_properties(sg2_${name} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS sg2_${name} EXPORT stylegan2-cpp-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# sg2_link_allocator(TARGET): links tcmalloc into an executable when enabled (no symbol is
# referenced, so --no-as-needed keeps it).
function(sg2_link_allocator target)
  if(SG2_WITH_TCMALLOC_ENABLED)
    target_link_libraries(${target} PRIVATE -Wl,--no-as-needed ${SG2_TCMALLOC_LIBRARY} -Wl,--as-needed)
  endif()
endfunction()

# sg2_add_app(NAME SOURCES ... DEPS ...): an executable under bin/.
function(sg2_add_app name)
  cmake_parse_arguments(_app "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${_app_SOURCES})
  target_link_libraries(${name} PRIVATE ${_app_DEPS})
  target_compile_options(${name} PRIVATE ${SG2_WARNINGS})
  sg2_link_allocator(${name})
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

# sg2_add_test_binary(NAME SOURCES ... DEPS ... [LABELS ...]): one gtest binary per module,
# each test case registered with ctest.
function(sg2_add_test_binary name)
  cmake_parse_arguments(_t "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${_t_SOURCES})
  target_link_libraries(${name} PRIVATE ${_t_DEPS} GTest::gtest GTest::gtest_main)
  sg2_link_allocator(${name})
  target_compile_options(${name} PRIVATE ${SG2_WARNINGS})
  target_compile_definitions(${name} PRIVATE
    SG2_SOURCE_DIR="${PROJECT_SOURCE_DIR}" SG2_BINARY_DIR="${CMAKE_BINARY_DIR}")
  # A limit of their own: plain `ctest` has no default, and a hung test would wait forever.
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "unit;${_t_LABELS}" TIMEOUT 300)
endfunction()

# sg2_add_mpi_test(NAME NP n COMMAND ...): runs COMMAND under real mpirun with n ranks.
function(sg2_add_mpi_test name)
  cmake_parse_arguments(_m "" "NP;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT SG2_WITH_MPI_ENABLED)
    return()
  endif()
  if(NOT _m_TIMEOUT)
    set(_m_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe
    ${MPIEXEC_NUMPROC_FLAG} ${_m_NP} ${_m_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS "mpi" TIMEOUT ${_m_TIMEOUT} ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()

# The precompiled LibTorch header. <ATen/ATen.h> costs 10-13 s of every translation unit that
# includes it, most of ours: it is compiled once into sg2_torch_pch and every target that links
# LibTorch (directly or through our libraries) reuses it. GCC uses it only under the same
# definitions and flags, which those targets share (LibTorch's, OpenMP's, core's); -Winvalid-pch
# names any translation unit that could not. -DSG2_PRECOMPILE_TORCH=OFF builds without it (and so
# checks that every file includes what it uses; the option is in Sg2Dependencies.cmake).

# _sg2_links_torch(OUT TARGET): whether TARGET links sg2_torch, itself or through our libraries
# (an alias such as sg2::nn reads as the library it names).
function(_sg2_links_torch out target)
  set(${out} OFF PARENT_SCOPE)
  get_target_property(_libs ${target} LINK_LIBRARIES)
  foreach(_lib IN LISTS _libs)
    if(_lib STREQUAL "sg2_torch")
      set(${out} ON PARENT_SCOPE)
      return()
    endif()
    if(NOT _lib MATCHES "^sg2(::|_)" OR NOT TARGET ${_lib})
      continue()
    endif()
    _sg2_links_torch(_via ${_lib})
    if(_via)
      set(${out} ON PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# _sg2_reuse_torch_pch_in(DIR): every target of DIR and its subdirectories that links LibTorch.
function(_sg2_reuse_torch_pch_in dir)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_type ${_target} TYPE)
    if(_target STREQUAL "sg2_torch_pch" OR NOT _type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    _sg2_links_torch(_uses_torch ${_target})
    if(_uses_torch)
      target_precompile_headers(${_target} REUSE_FROM sg2_torch_pch)
    endif()
  endforeach()
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_subdir IN LISTS _subdirs)
    _sg2_reuse_torch_pch_in(${_subdir})
  endforeach()
endfunction()

# sg2_precompile_torch_header(): called once every target is defined (the top CMakeLists.txt).
function(sg2_precompile_torch_header)
  if(NOT SG2_PRECOMPILE_TORCH)
    return()
  endif()
  set(_source ${CMAKE_BINARY_DIR}/sg2_torch_pch.cpp)
  file(CONFIGURE OUTPUT ${_source} CONTENT "// The owner of the precompiled <ATen/ATen.h> (cmake/Sg2Helpers.cmake).\n")
  add_library(sg2_torch_pch OBJECT ${_source})
  target_link_libraries(sg2_torch_pch PRIVATE sg2::core sg2_torch)
  target_compile_options(sg2_torch_pch PRIVATE ${SG2_WARNINGS})
  target_precompile_headers(sg2_torch_pch PRIVATE $<$<COMPILE_LANGUAGE:CXX>:<ATen/ATen.h$<ANGLE-R>>)
  _sg2_reuse_torch_pch_in(${PROJECT_SOURCE_DIR})
endfunction()
