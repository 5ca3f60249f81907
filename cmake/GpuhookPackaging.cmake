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
# One page per subcommand and the topics that span them, as the man pages and --help name them.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

if(TARGET gantt-cli)
  # The man pages and the bash and zsh completions, written by `gantt-cli generate` from the
  # CLI itself (tools/gantt-cli/cmd_generate.cpp): every subcommand and option is in them.
  set(_man_dir ${PROJECT_BINARY_DIR}/man)
  set(_completion_dir ${PROJECT_BINARY_DIR}/completion)
  add_custom_command(OUTPUT ${_man_dir}/gantt-cli.1.gz ${_completion_dir}/gantt-cli.bash ${_completion_dir}/_gantt-cli
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${_man_dir}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_man_dir} ${_completion_dir}
    COMMAND $<TARGET_FILE:gantt-cli> generate man -o ${_man_dir}
    COMMAND find ${_man_dir} -name *.1 -exec gzip -9nf {} +
    COMMAND $<TARGET_FILE:gantt-cli> generate bash -o ${_completion_dir}/gantt-cli.bash
    COMMAND $<TARGET_FILE:gantt-cli> generate zsh -o ${_completion_dir}/_gantt-cli
    DEPENDS gantt-cli
    COMMENT "Man pages and shell completions from gantt-cli"
    VERBATIM)
  add_custom_target(gantt_cli_man ALL DEPENDS ${_man_dir}/gantt-cli.1.gz ${_completion_dir}/gantt-cli.bash)
  install(DIRECTORY ${_man_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1.gz")
  install(FILES ${_completion_dir}/gantt-cli.bash
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME gantt-cli)
  install(FILES ${_completion_dir}/_gantt-cli DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
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
