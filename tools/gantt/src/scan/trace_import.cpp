// Format detection and the importer CaptureReader calls (gpuhook/foreign_import.h). A file is
// imported once per process: every later reader of it (parallel shares, a whole load's second
// look) reads the same in-memory capture.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include <gpuhook/capture.h>
#include <gpuhook/foreign_import.h>

#include "gantt/scan/trace_import.h"
#include "text_source.h"

namespace gantt::scan {

namespace {

bool is_json_start(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// The first bytes of a gzip member's content, to tell a gzip'd trace from another gzip file.
std::string gunzip_head(const std::string& path, int fd) {
  TextSource text(path, fd, /*gzip=*/true);
  std::string head;
  while (head.size() < 64) {
    const char c = text.Take();
    if (c == '\0') break;
    head.push_back(c);
  }
  return head;
}

using FileKey = std::tuple<dev_t, ino_t, off_t, int64_t, int64_t>;
std::mutex g_mu;
std::map<FileKey, int> g_imported;  // memfd of each imported file's capture

[[noreturn]] void io_error(const std::string& path, const std::string& what) {
  throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kIo, path, 0, what + ": " + std::strerror(errno));
}

int import_file(const std::string& path, int fd, std::string_view head) {
  TraceFormat format = detect_format(head);
  if (format == TraceFormat::kUnknown) return -1;
  if (format == TraceFormat::kKinetoJsonGzip && !is_json_start(gunzip_head(path, fd))) {
    throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kNotACapture, path, 0,
                                "a gzip file that holds no JSON: not a gpuhook capture nor a gzip'd torch.profiler trace");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) io_error(path, "cannot stat");
  const FileKey key{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto it = g_imported.find(key); it != g_imported.end()) {
    const int copy = ::fcntl(it->second, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) io_error(path, "cannot share the imported capture");
    return copy;
  }
  const int memfd = ::memfd_create("gantt-import", MFD_CLOEXEC);
  if (memfd < 0) io_error(path, "cannot make room for the imported capture (memfd_create)");
  const int writer_fd = ::fcntl(memfd, F_DUPFD_CLOEXEC, 0);
  if (writer_fd < 0) {
    ::close(memfd);
    io_error(path, "cannot share the imported capture");
  }
  std::string error;
  gpuhook::WriterOptions options;
  options.zstd_level = 1;  // read once, a moment later: speed over size
  auto writer = gpuhook::CaptureWriter::from_fd(writer_fd, options, &error);
  if (!writer) {
    ::close(memfd);
    throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kIo, path, 0, "cannot write the imported capture: " + error);
  }
  try {
    if (format == TraceFormat::kNsysSqlite) {
      import_nsys(path, *writer);
    } else {
      import_kineto(path, fd, format == TraceFormat::kKinetoJsonGzip, *writer);
    }
  } catch (...) {
    writer.reset();
    ::close(memfd);
    throw;
  }
  if (!writer->close()) {
    const std::string why = writer->last_error();
    ::close(memfd);
    throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kIo, path, 0, "cannot write the imported capture: " + why);
  }
  writer.reset();
  g_imported.emplace(key, memfd);
  const int copy = ::fcntl(memfd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) io_error(path, "cannot share the imported capture");
  return copy;
}

}  // namespace

TraceFormat detect_format(std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) {
    return TraceFormat::kKinetoJsonGzip;
  }
  // "SQLite format 3\0" (sqlite.org/fileformat.html, 1.3).
  if (head.size() >= 16 && head.substr(0, 16) == std::string_view("SQLite format 3\0", 16)) return TraceFormat::kNsysSqlite;
  if (is_json_start(head)) return TraceFormat::kKinetoJson;
  return TraceFormat::kUnknown;
}

const char* to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::kKinetoJson: return "torch.profiler (Kineto) JSON trace";
    case TraceFormat::kKinetoJsonGzip: return "gzip'd torch.profiler (Kineto) JSON trace";
    case TraceFormat::kNsysSqlite: return "Nsight Systems SQLite export";
    case TraceFormat::kUnknown: break;
  }
  return "unknown";
}

std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    }
  }
  if (text.size() > kMax) out += "...";
  return out;
}

void enable_trace_import() {
  gpuhook::set_foreign_importer(&import_file,
                                "a torch.profiler/Kineto JSON trace (plain or gzip'd) or an Nsight Systems SQLite export");
}

void forget_imports() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [key, memfd] : g_imported) ::close(memfd);
  g_imported.clear();
}

}  // namespace gantt::scan
