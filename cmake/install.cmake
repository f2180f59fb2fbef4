# Install rules (LITHE_INSTALL, on when lithe is the top-level project): `cmake --install BUILD
# --prefix PREFIX` puts
#   include/lithe.h, include/lithe_dlpack.h (every public header in include/)
#   lib/liblithe.so.0.1.0 (+ .so.0, .so), lib/liblithe.a, lib/liblithe_cuda.so (the CUDA module,
#       when built: liblithe loads it from beside itself)
#   bin/lithe (bin/lithe.wasm in the wasi preset)
#   lib/cmake/lithe/litheConfig.cmake, litheConfigVersion.cmake, litheTargets*.cmake:
#       find_package(lithe) gives lithe::lithe (shared) and lithe::lithe_static
#   lib/pkgconfig/lithe.pc (relocatable: paths relative to the .pc file)
# tests/install/run.sh checks all of it from an outside project (docs/install.md).
include(CMakePackageConfigHelpers)
set(LITHE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lithe)

set(lithe_install_targets lithe_static)
if(TARGET lithe)
  list(PREPEND lithe_install_targets lithe)
endif()
install(TARGETS ${lithe_install_targets} EXPORT litheTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
file(GLOB lithe_public_headers ${CMAKE_CURRENT_SOURCE_DIR}/include/*.h)
install(FILES ${lithe_public_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(LITHE_CUDA_ENABLED)
  install(TARGETS lithe_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(TARGET lithe_cli)
  install(TARGETS lithe_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT litheTargets NAMESPACE lithe:: DESTINATION ${LITHE_CMAKE_DIR})
# The static library's own dependencies (Threads::Threads) come back in the config file.
if(LITHE_WASM)
  set(LITHE_CONFIG_THREADS OFF)
  set(LITHE_CONFIG_DEFAULT lithe_static)
else()
  set(LITHE_CONFIG_THREADS ON)
  set(LITHE_CONFIG_DEFAULT lithe)
endif()
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/litheConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/litheConfig.cmake INSTALL_DESTINATION ${LITHE_CMAKE_DIR})
# 0.x: a minor release may change the API, so only the same major.minor satisfies a request
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/litheConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/litheConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/litheConfigVersion.cmake
        DESTINATION ${LITHE_CMAKE_DIR})

# lithe.pc: prefix is found from the file's own place, so `cmake --install --prefix` anywhere works
file(RELATIVE_PATH LITHE_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" LITHE_PC_TO_PREFIX "${LITHE_PC_TO_PREFIX}")
set(LITHE_PC_LIBS_PRIVATE "-lm")
if(NOT LITHE_WASM)
  string(APPEND LITHE_PC_LIBS_PRIVATE " -pthread")
  if(CMAKE_DL_LIBS)
    string(APPEND LITHE_PC_LIBS_PRIVATE " -l${CMAKE_DL_LIBS}")
  endif()
endif()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/lithe.pc.in ${CMAKE_CURRENT_BINARY_DIR}/lithe.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lithe.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
