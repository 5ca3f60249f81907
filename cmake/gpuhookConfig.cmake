# find_package(gpuhook): the capture format's library, gpuhook::gpuhook_format.
include(CMakeFindDependencyMacro)
find_dependency(Protobuf)
find_dependency(zstd CONFIG)
include(${CMAKE_CURRENT_LIST_DIR}/gpuhookFormat.cmake)
