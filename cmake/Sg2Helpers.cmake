# Helpers shared by src/, apps/ and tests/.

set(SG2_WARNINGS $<$<COMPILE_LANGUAGE:CXX>:-Wall$<SEMICOLON>-Wextra$<SEMICOLON>-Wno-unused-parameter>)

# sg2_add_module(NAME SOURCES ... DEPS ...): one static library per module (core, data, nn, train).
function(sg2_add_module name)
  cmake_parse_arguments(_mod "" "" "SOURCES;DEPS" ${ARGN})
  add_library(sg2_${name} STATIC ${_mod_SOURCES})
  target_include_directories(sg2_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(sg2_${name} PUBLIC ${_mod_DEPS})
  target_compile_options(sg2_${name} PRIVATE ${SG2_WARNINGS})
  add_library(sg2::${name} ALIAS sg2_${name})
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
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "unit;${_t_LABELS}")
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
