// The capture's descriptor among a program's own: a program that closes
// every descriptor it did not open, then opens a file that gets the same number, must find
// only its own bytes in that file, and its descriptor still open after the capture is closed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <string>

#include "capture_test_util.h"

namespace gpuhook {
namespace {

using namespace gpuhook::testing;

v1::Record a_range(int64_t t) {
  v1::Record r;
  r.mutable_range()->set_time_ns(t);
  return r;
}

TEST(CaptureWriterDescriptor, AReusedNumberIsNeitherWrittenToNorClosed) {
  const std::string capture = temp_path("fd-capture");
  const int fd = ::open(capture.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  std::string err;
  auto w = CaptureWriter::from_fd(fd, WriterOptions{}, &err);
  ASSERT_TRUE(w) << err;
  w->write(a_range(1));
  ASSERT_TRUE(w->flush()) << w->last_error();

  // The program closes the capture's number and opens a file of its own under it.
  ::close(fd);
  const std::string own = temp_path("fd-own");
  const int other = ::open(own.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(other, 0);
  if (other != fd) {
    ASSERT_EQ(::dup2(other, fd), fd);
    ::close(other);
  }

  w->write(a_range(2));
  EXPECT_FALSE(w->flush());
  EXPECT_NE(w->last_error().find("another file"), std::string::npos) << w->last_error();
  EXPECT_FALSE(w->close());
  EXPECT_EQ(read_bytes(own), "") << "the capture wrote into the program's file";
  EXPECT_NE(::fcntl(fd, F_GETFD), -1) << "the capture closed the program's descriptor";
  EXPECT_EQ(w->records_lost(), 1u);
  w.reset();
  EXPECT_NE(::fcntl(fd, F_GETFD), -1) << "the destructor closed the program's descriptor";
  ::close(fd);
  // What was written before stays readable.
  EXPECT_EQ(read_all(capture).size(), 1u);
}

TEST(CaptureWriterDescriptor, AClosedDescriptorStopsWritingWithAReason) {
  const std::string capture = temp_path("fd-closed");
  const int fd = ::open(capture.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  std::string err;
  auto w = CaptureWriter::from_fd(fd, WriterOptions{}, &err);
  ASSERT_TRUE(w) << err;
  ::close(fd);
  w->write(a_range(1));
  EXPECT_FALSE(w->flush());
  EXPECT_NE(w->last_error().find("closed by the program"), std::string::npos) << w->last_error();
}

// The number a created capture gets: above what programs close or dup2 onto, close-on-exec.
TEST(CaptureWriterDescriptor, ACreatedCaptureSitsHighAndClosesOnExec) {
  const std::string capture = temp_path("fd-high");
  std::string err;
  auto w = CaptureWriter::create(capture, WriterOptions{}, &err);
  ASSERT_TRUE(w) << err;
  int found = -1;
  for (int fd = 0; fd < 4096 && found < 0; ++fd) {
    char link[64], target[PATH_MAX];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = ::readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (capture == target) found = fd;
  }
  ASSERT_GE(found, 0) << "no descriptor of " << capture;
  EXPECT_GE(found, 64);
  EXPECT_TRUE(::fcntl(found, F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(w->close());
}

}  // namespace
}  // namespace gpuhook
