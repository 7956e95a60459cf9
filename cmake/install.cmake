# Installs the shared library, the public headers, a CMake package
# (find_package(w4jit) -> w4jit::w4jit) and a pkg-config file (w4jit.pc).
include(CMakePackageConfigHelpers)

install(TARGETS w4jit_shared EXPORT w4jitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/w4jit
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT w4jitTargets NAMESPACE w4jit::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/w4jit)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/w4jitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/w4jitConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/w4jit)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/w4jitConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/w4jitConfig.cmake
              ${PROJECT_BINARY_DIR}/w4jitConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/w4jit)

# From the .pc file's folder back to the prefix ("../.." for lib/pkgconfig).
file(RELATIVE_PATH W4JIT_PC_TO_PREFIX
     "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(${PROJECT_SOURCE_DIR}/cmake/w4jit.pc.in
  ${PROJECT_BINARY_DIR}/w4jit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/w4jit.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
