// A share's spooled output (scan_spool.h).
#include "scan_spool.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gantt::exporting {

void Spool::flush() {
  if (text.empty()) return;
  const uint64_t now = total_->fetch_add(text.size()) + text.size();
  if (limit_ != 0 && now > limit_) {
    over_ = true;
    text.clear();
    return;
  }
  if (!file_) {
    file_ = std::tmpfile();
    if (!file_) throw std::runtime_error(std::string("cannot create a temporary file for the export: ") + std::strerror(errno));
  }
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size())
    throw std::runtime_error(std::string("cannot write the export's temporary file: ") + std::strerror(errno));
  text.clear();
}

void Spool::copy_to(std::ostream& out) {
  flush();
  if (!file_) return;
  std::rewind(file_);
  std::vector<char> buf(size_t{1} << 20);
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), file_)) > 0;) out.write(buf.data(), static_cast<std::streamsize>(n));
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace gantt::exporting
