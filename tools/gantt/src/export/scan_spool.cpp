// A share's spooled output (scan_spool.h).
#include "scan_spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gantt::exporting {

namespace {
[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }
}  // namespace

Spool::~Spool() {
  if (file_) std::fclose(file_);
  if (!partial_.empty()) ::unlink(partial_.c_str());
}

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
    if (!file_) fail("cannot create a temporary file for the export");
  }
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) fail("cannot write the export's temporary file");
  text.clear();
}

bool Spool::become(const std::string& output, std::string_view head) {
  if (file_ || output.empty()) return false;
  // Replaced by a rename, so only a file that is ours alone: a link or a device written through
  // (as -o /dev/null) is written as before.
  struct stat st {};
  mode_t mode = 0;
  if (::lstat(output.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != ::geteuid()) return false;
    mode = st.st_mode & 07777;
  } else if (errno == ENOENT) {
    const mode_t mask = ::umask(0);  // what std::ofstream's new file would have had
    ::umask(mask);
    mode = 0666 & ~mask;
  } else {
    return false;
  }
  std::string name = output + ".partial-XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return false;
  ::fchmod(fd, mode);
  file_ = ::fdopen(fd, "w+b");
  if (!file_) {
    ::close(fd);
    ::unlink(name.c_str());
    return false;
  }
  partial_ = std::move(name);
  output_ = output;
  if (std::fwrite(head.data(), 1, head.size(), file_) != head.size()) fail("cannot write " + partial_);
  return true;
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

void Spool::append_to(Spool& first) {
  flush();
  if (!file_) return;
  if (std::fflush(file_) != 0 || std::fflush(first.file_) != 0) fail("cannot write " + first.partial_);
  const int from = ::fileno(file_), to = ::fileno(first.file_);
  off_t at = 0;
  const off_t size = ::lseek(from, 0, SEEK_END);
  // In the kernel, no copy through this process; read and written where the two files' file
  // systems do not allow it.
  while (at < size) {
    const ssize_t n = ::copy_file_range(from, &at, to, nullptr, static_cast<size_t>(size - at), 0);
    if (n > 0) continue;
    if (n == 0 || (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)) fail("cannot write " + first.partial_);
    std::vector<char> buf(size_t{1} << 20);
    for (ssize_t r; (r = ::pread(from, buf.data(), buf.size(), at)) > 0; at += r)
      if (::write(to, buf.data(), static_cast<size_t>(r)) != r) fail("cannot write " + first.partial_);
    break;
  }
  std::fclose(file_);
  file_ = nullptr;
}

void Spool::absorb(Spool& later) {
  if (over_ || later.over_) {
    over_ = true;
    return;
  }
  flush();
  if (!file_) {
    file_ = std::tmpfile();
    if (!file_) fail("cannot create a temporary file for the export");
  }
  later.append_to(*this);
}

void Spool::commit(std::string_view tail) {
  flush();
  if (std::fwrite(tail.data(), 1, tail.size(), file_) != tail.size() || std::fclose(file_) != 0) {
    file_ = nullptr;
    fail("cannot write " + partial_);
  }
  file_ = nullptr;
  if (::rename(partial_.c_str(), output_.c_str()) != 0) fail("cannot write " + output_);
  partial_.clear();
}

void deliver(const std::vector<Spool*>& spools, std::string_view head, std::string_view tail,
             const std::function<std::ostream&()>& open_output) {
  if (!spools.empty() && spools.front()->in_place()) {
    Spool& first = *spools.front();
    first.flush();
    for (size_t i = 1; i < spools.size(); ++i) spools[i]->append_to(first);
    first.commit(tail);
    return;
  }
  std::ostream& os = open_output();
  os << head;
  for (Spool* s : spools) s->copy_to(os);
  os << tail;
}

}  // namespace gantt::exporting
