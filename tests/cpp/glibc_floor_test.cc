// pjrt/link/glibc_floor.cc: the stand-ins the shared library uses for glibc functions newer than
// 2.28 agree with the functions they replace on this (newer) glibc.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <string>

// The unit is linked into libkiln_pjrt.so only; the test compiles it in directly.
#include "pjrt/link/glibc_floor.cc"  // NOLINT(bugprone-suspicious-include)

namespace {

int LocalFunction() { return 42; }

TEST(GlibcFloorTest, FindObjectMatchesGlibc) {
  void* pcs[] = {reinterpret_cast<void*>(&LocalFunction), reinterpret_cast<void*>(&std::printf),
                 reinterpret_cast<void*>(&std::fclose)};
  for (void* pc : pcs) {
    struct dl_find_object want {
    }, got{};
    ASSERT_EQ(_dl_find_object(pc, &want), 0);
    ASSERT_EQ(__wrap__dl_find_object(pc, &got), 0);
    EXPECT_EQ(got.dlfo_eh_frame, want.dlfo_eh_frame);
    EXPECT_EQ(got.dlfo_map_start, want.dlfo_map_start);
    EXPECT_NE(got.dlfo_eh_frame, nullptr);
  }
  struct dl_find_object none {};
  EXPECT_EQ(__wrap__dl_find_object(reinterpret_cast<void*>(16), &none), -1);
  EXPECT_EQ(LocalFunction(), 42);
}

TEST(GlibcFloorTest, OldMathVersionsGiveTheSameResults) {
  for (double x : {-700.0, -1.5, 0.0, 0.3, 1.0, 2.5, 88.0, 700.0}) {
    EXPECT_EQ(__wrap_exp(x), std::exp(x)) << x;
    if (x > 0) {
      EXPECT_EQ(__wrap_log(x), std::log(x)) << x;
    }
    EXPECT_EQ(__wrap_pow(1.5, x), std::pow(1.5, x)) << x;
  }
}

TEST(GlibcFloorTest, Arc4randomVaries) {
  std::set<uint32_t> seen;
  for (int i = 0; i < 64; ++i) seen.insert(__wrap_arc4random());
  EXPECT_GT(seen.size(), 60u);
}

TEST(GlibcFloorTest, OldFstatAndTrylockAgree) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  std::fputs("twelve bytes", f);
  std::fflush(f);
  struct stat64 want {
  }, got{};
  ASSERT_EQ(fstat64(fileno(f), &want), 0);
  ASSERT_EQ(__wrap_fstat64(fileno(f), &got), 0);
  EXPECT_EQ(got.st_size, 12);
  EXPECT_EQ(got.st_ino, want.st_ino);
  std::fclose(f);
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  EXPECT_EQ(__wrap_pthread_mutex_trylock(&m), 0);
  EXPECT_NE(__wrap_pthread_mutex_trylock(&m), 0);  // EBUSY
  pthread_mutex_unlock(&m);
}

TEST(GlibcFloorTest, StatAndLstatAgreeWithGlibc) {
  char dir[] = "/tmp/kiln_glibc_floor_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/f", link = std::string(dir) + "/l";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("seven b", f);
  std::fclose(f);
  ASSERT_EQ(symlink(file.c_str(), link.c_str()), 0);
  struct stat want {
  }, got{};
  ASSERT_EQ(stat(link.c_str(), &want), 0);
  ASSERT_EQ(__wrap_stat(link.c_str(), &got), 0);
  EXPECT_EQ(got.st_size, 7);
  EXPECT_EQ(got.st_ino, want.st_ino);
  EXPECT_TRUE(S_ISREG(got.st_mode));
  ASSERT_EQ(lstat(link.c_str(), &want), 0);
  ASSERT_EQ(__wrap_lstat(link.c_str(), &got), 0);
  EXPECT_EQ(got.st_ino, want.st_ino);
  EXPECT_TRUE(S_ISLNK(got.st_mode));
  errno = 0;
  EXPECT_EQ(__wrap_stat((std::string(dir) + "/missing").c_str(), &got), -1);
  EXPECT_EQ(errno, ENOENT);
  unlink(link.c_str());
  unlink(file.c_str());
  rmdir(dir);
}

TEST(GlibcFloorTest, ClockwaitTimesOutAtTheMonotonicDeadline) {
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  struct timespec start {
  }, deadline{}, end{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  deadline = start;
  deadline.tv_nsec += 50'000'000;
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1'000'000'000;
  }
  pthread_mutex_lock(&m);
  int rc = 0;
  do {
    rc = __wrap_pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &deadline);
  } while (rc == 0);  // spurious wake-ups
  pthread_mutex_unlock(&m);
  clock_gettime(CLOCK_MONOTONIC, &end);
  EXPECT_EQ(rc, ETIMEDOUT);
  double waited = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) * 1e-9;
  EXPECT_GE(waited, 0.045);
  EXPECT_LT(waited, 2.0);
}

}  // namespace
