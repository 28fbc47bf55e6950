# cmake --install: the modules' static libraries, the headers, the programs, the presets and a CMake
# package, so that another project builds on the library with find_package(stylegan2-cpp)
# (docs/building.md, "Installing"). The modules' targets are exported as stylegan2::<module>.
include(CMakePackageConfigHelpers)
set(SG2_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/stylegan2-cpp)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/stylegan2-cpp/configs)
install(EXPORT stylegan2-cpp-targets NAMESPACE stylegan2:: DESTINATION ${SG2_PACKAGE_DIR})

# What the package's consumer must find again: the optional parts as this build resolved them.
set(SG2_PACKAGE_WITH_MPI ${SG2_WITH_MPI_ENABLED})
set(SG2_PACKAGE_WITH_CUDA ${SG2_WITH_CUDA_ENABLED})
set(SG2_PACKAGE_WITH_NCCL ${SG2_WITH_NCCL_ENABLED})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/stylegan2-cppConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/stylegan2-cppConfig.cmake INSTALL_DESTINATION ${SG2_PACKAGE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/stylegan2-cppConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/stylegan2-cppConfig.cmake ${CMAKE_BINARY_DIR}/stylegan2-cppConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake
        DESTINATION ${SG2_PACKAGE_DIR})
