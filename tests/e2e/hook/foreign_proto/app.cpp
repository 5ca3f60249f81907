// A program with its own generated "capture.proto": it must run the same under the hook.
#include <cstdio>
#include <string>

#include "capture.pb.h"

int main() {
  someapp::Capture c;
  c.set_name("mine");
  std::string bytes;
  c.SerializeToString(&bytes);
  someapp::Capture back;
  back.ParseFromString(bytes);
  std::printf("%s %zu\n", back.name().c_str(), bytes.size());
  return 0;
}
