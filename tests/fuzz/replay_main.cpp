// Replays files (the seed corpus, crash reproducers) through the fuzz target without
// libFuzzer, so a GCC build still runs every seed under its sanitizers as a ctest.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot open %s\n", argv[i]);
      return 2;
    }
    std::ostringstream s;
    s << in.rdbuf();
    std::string b = s.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    ++n;
  }
  std::printf("replayed %d inputs\n", n);
  return n > 0 ? 0 : 1;
}
