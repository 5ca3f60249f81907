// Records held for a later ModelBuilder, kept serialized one after another behind their
// lengths: a parsed v1::Record of a few fields takes a few hundred bytes with its allocations,
// its bytes a few dozen. What a scan keeps whole for the model it builds at its end (NCCL calls
// and their external ids, a capture's NVTX ranges, its allocation records) goes here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gpuhook/v1/capture.pb.h>

namespace gantt {

class RecordSpool {
 public:
  void add(const gpuhook::v1::Record& r) {
    r.SerializeToString(&scratch_);
    const uint32_t n = static_cast<uint32_t>(scratch_.size());
    // Blocks of a fixed size, each reserved once: one string grown by doubling held up to twice
    // its bytes, and three times while it moved (a scan's NCCL calls: 53 MB at 10 M events).
    if (blocks_.empty() || blocks_.back().size() + sizeof n + n > blocks_.back().capacity()) {
      blocks_.emplace_back();
      blocks_.back().reserve(std::max(kBlockBytes, sizeof n + n));
    }
    blocks_.back().append(reinterpret_cast<const char*>(&n), sizeof n).append(scratch_);
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Calls f(record) for each record in the order added, parsed into one reused message.
  template <class F>
  void for_each(F&& f) const {
    gpuhook::v1::Record r;
    for (const std::string& bytes : blocks_)
      for (size_t at = 0; at + sizeof(uint32_t) <= bytes.size();) {
        uint32_t n = 0;
        std::memcpy(&n, bytes.data() + at, sizeof n);
        at += sizeof n;
        r.ParseFromArray(bytes.data() + at, static_cast<int>(n));  // bytes this process wrote
        at += n;
        f(static_cast<const gpuhook::v1::Record&>(r));
      }
  }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  std::vector<std::string> blocks_;
  std::string scratch_;
  size_t size_ = 0;
};

}  // namespace gantt
