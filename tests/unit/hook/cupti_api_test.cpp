// Which libcupti the hook loads: the process's own copy first, never an unversioned or a
// pre-13 one. Runs against the simulator's libcupti.so.13 (SIM_CUPTI), a real shared library
// with the soname libcupti.so.13.
#include "cupti_api.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace gpuhook::hook {
namespace {

TEST(CuptiApi, CandidatesNeverNameTheUnversionedLibrary) {
  for (const std::string& c : cupti_candidates("")) {
    EXPECT_NE(c.size() >= 11 ? c.substr(c.size() - 11) : c, "libcupti.so") << c;
  }
}

#ifdef SIM_CUPTI
TEST(CuptiApi, ReusesTheCuptiTheProcessAlreadyLoaded) {
  // As with torch.profiler: the process holds a libcupti.so.13 of its own (a copy in another
  // folder, as pip's nvidia-cuda-cupti wheel has it), and the CUDA runtime it uses sits beside
  // another libcupti.so.13 (as in the toolkit's lib64). The hook must take the loaded one.
  char dir[] = "/tmp/gpuhook-cupti-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string copy = std::string(dir) + "/libcupti.so.13";
  ASSERT_EQ(std::system(("cp " + std::string(SIM_CUPTI) + " " + copy).c_str()), 0);
  void* own = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(own, nullptr) << dlerror();
  void* cudart = dlopen(SIM_CUDART, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cudart, nullptr) << dlerror();
  CuptiApi api;
  std::string why;
  ASSERT_TRUE(load_cupti("", &api, &why)) << why;
  EXPECT_EQ(api.handle, own) << "loaded " << api.path << " beside the process's own " << copy;
  EXPECT_EQ(api.path, copy);
  ASSERT_NE(api.cuptiSetThreadIdType, nullptr);
  std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST(CuptiApi, RefusesACuptiOlderThan13) {
  setenv("GPUHOOK_SIM_CUPTI_VERSION", "24", 1);  // the simulator answers as CUDA 12.6's CUPTI
  CuptiApi api;
  std::string why;
  EXPECT_FALSE(load_cupti(SIM_CUPTI, &api, &why));
  unsetenv("GPUHOOK_SIM_CUPTI_VERSION");
  EXPECT_NE(why.find("older than 13.0"), std::string::npos) << why;
  EXPECT_TRUE(load_cupti(SIM_CUPTI, &api, &why)) << why;
}
#endif

}  // namespace
}  // namespace gpuhook::hook
