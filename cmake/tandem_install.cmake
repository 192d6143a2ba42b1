# Install rules: the static library and its public headers, the `tandem` CLI, the hardware
# profiles, a CMake package (find_package(tandem CONFIG) -> tandem::tandem) and tandem.pc.
# Included from the top-level CMakeLists.txt when TANDEM_INSTALL is on.
include(CMakePackageConfigHelpers)

set(TANDEM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tandem)

install(TARGETS tandem EXPORT tandemTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tandem_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tandem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiles/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tandem/profiles)

# The static library's private dependencies are exported as $<LINK_ONLY:...>: the config
# file finds each of them (the same set as target_link_libraries(tandem ...)).
install(EXPORT tandemTargets NAMESPACE tandem:: DESTINATION ${TANDEM_CMAKE_DIR}
        FILE tandem-targets.cmake)
set(TANDEM_CONFIG_WITH_KERAS_FILES ${TANDEM_KERAS_FOUND})
set(TANDEM_CONFIG_WITH_MPI OFF)
if(MPI_C_FOUND)
  set(TANDEM_CONFIG_WITH_MPI ON)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tandemConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tandem-config.cmake
                              INSTALL_DESTINATION ${TANDEM_CMAKE_DIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tandem-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tandem-config.cmake
              ${PROJECT_BINARY_DIR}/tandem-config-version.cmake
        DESTINATION ${TANDEM_CMAKE_DIR})

# tandem.pc: prefix relative to the file itself, so `cmake --install --prefix` anywhere works.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(TANDEM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH TANDEM_PC_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  set(TANDEM_PC_PREFIX "\${pcfiledir}/${TANDEM_PC_PREFIX}")
  string(REGEX REPLACE "/$" "" TANDEM_PC_PREFIX "${TANDEM_PC_PREFIX}")
endif()
set(TANDEM_PC_REQUIRES_PRIVATE "zlib fmt")
if(TANDEM_KERAS_FOUND)
  string(APPEND TANDEM_PC_REQUIRES_PRIVATE " libzip hdf5")
endif()
# -L for oneDNN only where the linker would not look anyway.
get_filename_component(TANDEM_DNNL_LIB_DIR "${DNNL_LIBRARY}" DIRECTORY)
set(TANDEM_PC_LIBS_PRIVATE "-ldnnl")
if(NOT TANDEM_DNNL_LIB_DIR IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  set(TANDEM_PC_LIBS_PRIVATE "-L${TANDEM_DNNL_LIB_DIR} -ldnnl")
endif()
if(MPI_C_FOUND)
  # Open MPI ships ompi-c.pc (MPICH: mpich.pc); otherwise the libraries FindMPI found.
  find_package(PkgConfig QUIET)
  set(TANDEM_MPI_PC "")
  if(PKG_CONFIG_FOUND)
    foreach(module ompi-c mpich)
      pkg_check_modules(TANDEM_PC_${module} QUIET ${module})
      if(TANDEM_PC_${module}_FOUND)
        set(TANDEM_MPI_PC ${module})
        break()
      endif()
    endforeach()
  endif()
  if(TANDEM_MPI_PC)
    string(APPEND TANDEM_PC_REQUIRES_PRIVATE " ${TANDEM_MPI_PC}")
  else()
    list(JOIN MPI_C_LIBRARIES " " TANDEM_MPI_LIBS)
    string(APPEND TANDEM_PC_LIBS_PRIVATE " ${MPI_C_LINK_FLAGS} ${TANDEM_MPI_LIBS}")
  endif()
  set(TANDEM_PC_CFLAGS_MPI "-DTANDEM_HAVE_MPI=1 -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/tandem.pc.in ${PROJECT_BINARY_DIR}/tandem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tandem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
