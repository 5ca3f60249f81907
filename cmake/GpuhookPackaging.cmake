# Installed beside the targets, and packed into a .deb by `cpack -G DEB` in the build directory.
include(CMakePackageConfigHelpers)

# find_package(gpuhook): the config (proto/ installs its targets) and a version file. 0.x
# versions promise nothing across minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpuhookConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/gpuhookConfig.cmake ${PROJECT_BINARY_DIR}/gpuhookConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpuhook COMPONENT format)

# pkg-config --cflags --libs gpuhook: the capture format library, for builds without CMake.
configure_file(${PROJECT_SOURCE_DIR}/packaging/gpuhook.pc.in ${PROJECT_BINARY_DIR}/gpuhook.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gpuhook.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT format)

install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

if(TARGET gantt-cli)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/completion/gantt-cli.bash
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME gantt-cli)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/completion/_gantt-cli
    DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
  # Man pages from each subcommand's --help, so they cannot drift from it.
  set(_man_dir ${PROJECT_BINARY_DIR}/man)
  set(_pages gantt-cli.1.gz)
  foreach(sub record info dump render stats diff diagnose export merge)
    list(APPEND _pages gantt-cli-${sub}.1.gz)
  endforeach()
  list(TRANSFORM _pages PREPEND ${_man_dir}/ OUTPUT_VARIABLE _page_paths)
  add_custom_command(OUTPUT ${_page_paths}
    COMMAND bash ${PROJECT_SOURCE_DIR}/packaging/gen-man.sh $<TARGET_FILE:gantt-cli> ${_man_dir} ${PROJECT_VERSION}
    DEPENDS gantt-cli ${PROJECT_SOURCE_DIR}/packaging/gen-man.sh
    COMMENT "Man pages from gantt-cli --help")
  add_custom_target(gantt_cli_man ALL DEPENDS ${_page_paths})
  install(FILES ${_page_paths} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

set(CPACK_PACKAGE_NAME gpuhook)
set(CPACK_PACKAGE_VENDOR "gpuhook")
set(CPACK_PACKAGE_CONTACT "gpuhook maintainers <maintainers@gpuhook.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU timelines for CUDA programs: record with libgpuhook.so, chart and compare with gantt-cli")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The libraries gantt-cli and libgpuhook.so link, as dpkg-shlibdeps finds them (libprotobuf,
# libzstd, cairo, re2, ...). CUDA itself is not a dependency: the hook loads CUPTI from the
# program's own CUDA installation.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Records every kernel, copy, memset, NCCL call and NVTX range of an unmodified\n program through CUPTI (LD_PRELOAD=libgpuhook.so), and draws, compares and\n diagnoses the captures with gantt-cli.")
include(CPack)
