// Helpers for multi-process tests of distributed/: a KeyValueStore in a directory (shared by
// forked children), and RunProcesses, which forks N children, each running a body whose return
// value is its exit code, and kills any that outlive a deadline (a hang is a failure, not a stuck
// test).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "distributed/kv_store.h"

namespace kiln::testing {

// One file per key; Put writes a temporary file and renames it, so Get never sees half a value.
class FileKeyValueStore : public distributed::KeyValueStore {
 public:
  explicit FileKeyValueStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

  Status Put(std::string_view key, std::string_view value) override {
    std::filesystem::path path = PathOf(key);
    std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(getpid());
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(value.data(), static_cast<std::streamsize>(value.size()));
      if (!out) return Internal("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, path);
    return Status::Ok();
  }

  StatusOr<std::string> Get(std::string_view key, std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::filesystem::path path = PathOf(key);
    while (true) {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        std::stringstream buffer;
        buffer << in.rdbuf();
        return buffer.str();
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status(StatusCode::kDeadlineExceeded, "key '" + std::string(key) + "' not set");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

 private:
  std::filesystem::path PathOf(std::string_view key) const {
    std::string name(key);
    for (char& c : name) {
      if (c == '/') c = '%';
    }
    return dir_ / name;
  }

  std::filesystem::path dir_;
};

// Exit codes of the `n` children (-1: killed at the deadline, -2: died of a signal).
inline std::vector<int> RunProcesses(
    int n, const std::function<int(int index, distributed::KeyValueStore& kv)>& body,
    std::chrono::seconds limit = std::chrono::seconds(60)) {
  char pattern[] = "/tmp/kiln_kv_XXXXXX";
  std::filesystem::path dir = mkdtemp(pattern);
  std::fflush(nullptr);
  std::vector<pid_t> pids(n);
  for (int i = 0; i < n; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) {
      FileKeyValueStore kv(dir);
      int code = 98;
      try {
        code = body(i, kv);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "process %d: exception: %s\n", i, e.what());
      }
      std::fflush(nullptr);
      _exit(code);
    }
  }
  std::vector<int> codes(n, -1);
  std::vector<bool> done(n, false);
  auto deadline = std::chrono::steady_clock::now() + limit;
  int left = n;
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < n; ++i) {
      int status = 0;
      if (done[i] || waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      done[i] = true;
      --left;
      codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 0; i < n; ++i) {
    if (!done[i]) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], nullptr, 0);
    }
  }
  std::filesystem::remove_all(dir);
  return codes;
}

}  // namespace kiln::testing
