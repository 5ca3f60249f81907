# The multi-process all-reduce training example (included from examples/CMakeLists.txt).
# It links the toolkit's libnccl.so.2; on the simulator LD_LIBRARY_PATH puts the simulated
# libnccl.so.2 first (RUNPATH, never RPATH).
find_library(GPUHOOK_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
if(NOT GPUHOOK_NCCL_LIBRARY)
  message(STATUS "libnccl not found: allreduce_train is not built")
  return()
endif()
add_executable(allreduce_train ${CMAKE_CURRENT_LIST_DIR}/allreduce_train.cu)
set_target_properties(allreduce_train PROPERTIES
  CUDA_RUNTIME_LIBRARY Shared
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples)
target_include_directories(allreduce_train PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_options(allreduce_train PRIVATE -Wl,--enable-new-dtags)
target_link_libraries(allreduce_train PRIVATE ${GPUHOOK_NCCL_LIBRARY} ${CMAKE_DL_LIBS})
configure_file(${CMAKE_CURRENT_LIST_DIR}/allreduce_train.simcost ${CMAKE_BINARY_DIR}/examples/allreduce_train.simcost COPYONLY)
