// Lets libkiln_pjrt.so load on glibc 2.28 (manylinux_2_28) although it is built on a newer one.
//
// Linked into the shared library only (CMakeLists.txt, with `--wrap=<name>` for each symbol
// below). A library built against glibc 2.36 asks for the newest version of every function it
// calls: exp/log/pow@GLIBC_2.29 (the versions without the SVID error wrapper), pthread_*@GLIBC_2.34
// (when libpthread moved into libc) and, through the statically linked libstdc++ and libgcc,
// __libc_single_threaded@2.32, _dl_find_object@2.35 and arc4random@2.36. Each call is routed to
// the oldest version of the same function, which every glibc since 2.2.5 has (same results; the
// old exp/log/pow also set errno), or, for the three that older glibcs lack, to an equivalent
// written here: arc4random from the getrandom system call, _dl_find_object from dl_iterate_phdr
// (the unwinder needs it to find a frame's unwind tables), and __libc_single_threaded as a
// constant 0, which makes libstdc++ always use atomic reference counts (correct, if not fastest).
// Gloo (distributed/, third_party/gloo) adds three: pthread_mutex_trylock@2.34 (the old version
// is the same function), pthread_cond_clockwait (2.30; libstdc++'s condition_variable waits on the
// steady clock with it), here a pthread_cond_timedwait@2.3.2 on the realtime clock until the same
// moment, and fstat64@2.33 (libstdc++'s file streams), here the old __fxstat64 it used to inline
// to. std::filesystem (create_directories, for XLA's dump options: pjrt/dump.cc) adds stat and
// lstat@2.33, here the newfstatat system call.
// scripts/build_wheel.sh checks the result: auditwheel must tag the wheel manylinux_2_28.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define KILN_OLD_VERSION(ret, name, version, params, args)                    \
  extern "C" ret kiln_old_##name params;                                      \
  __asm__(".symver kiln_old_" #name "," #name "@" version);                   \
  extern "C" __attribute__((visibility("hidden"))) ret __wrap_##name params { \
    return kiln_old_##name args;                                              \
  }

KILN_OLD_VERSION(double, exp, "GLIBC_2.2.5", (double x), (x))
KILN_OLD_VERSION(double, log, "GLIBC_2.2.5", (double x), (x))
KILN_OLD_VERSION(double, pow, "GLIBC_2.2.5", (double x, double y), (x, y))
KILN_OLD_VERSION(int, pthread_create, "GLIBC_2.2.5",
                 (pthread_t * t, const pthread_attr_t* a, void* (*f)(void*), void* arg),
                 (t, a, f, arg))
KILN_OLD_VERSION(int, pthread_detach, "GLIBC_2.2.5", (pthread_t t), (t))
KILN_OLD_VERSION(int, pthread_join, "GLIBC_2.2.5", (pthread_t t, void** r), (t, r))
KILN_OLD_VERSION(int, pthread_once, "GLIBC_2.2.5", (pthread_once_t * o, void (*f)()), (o, f))
KILN_OLD_VERSION(int, pthread_setname_np, "GLIBC_2.12", (pthread_t t, const char* n), (t, n))
KILN_OLD_VERSION(int, pthread_key_create, "GLIBC_2.2.5", (pthread_key_t * k, void (*d)(void*)),
                 (k, d))
KILN_OLD_VERSION(int, __pthread_key_create, "GLIBC_2.2.5", (pthread_key_t * k, void (*d)(void*)),
                 (k, d))
KILN_OLD_VERSION(int, pthread_key_delete, "GLIBC_2.2.5", (pthread_key_t k), (k))
KILN_OLD_VERSION(void*, pthread_getspecific, "GLIBC_2.2.5", (pthread_key_t k), (k))
KILN_OLD_VERSION(int, pthread_setspecific, "GLIBC_2.2.5", (pthread_key_t k, const void* v), (k, v))
KILN_OLD_VERSION(int, pthread_mutex_trylock, "GLIBC_2.2.5", (pthread_mutex_t * m), (m))
KILN_OLD_VERSION(int, pthread_attr_setstacksize, "GLIBC_2.2.5", (pthread_attr_t * a, size_t s),
                 (a, s))

extern "C" int kiln_old_pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m,
                                               const struct timespec* abstime);
__asm__(".symver kiln_old_pthread_cond_timedwait,pthread_cond_timedwait@GLIBC_2.3.2");
extern "C" int kiln_old___fxstat64(int version, int fd, struct stat64* buf);
__asm__(".symver kiln_old___fxstat64,__fxstat64@GLIBC_2.2.5");

extern "C" {

// Waits on the condition variable's own (realtime) clock until the moment `abstime` names on
// `clock`: the same deadline, unless the realtime clock is set meanwhile.
__attribute__((visibility("hidden"))) int __wrap_pthread_cond_clockwait(
    pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const struct timespec* abstime) {
  if (clock == CLOCK_REALTIME) return kiln_old_pthread_cond_timedwait(c, m, abstime);
  struct timespec now {
  }, real{};
  clock_gettime(clock, &now);
  clock_gettime(CLOCK_REALTIME, &real);
  int64_t left = (static_cast<int64_t>(abstime->tv_sec) - now.tv_sec) * 1000000000 +
                 (abstime->tv_nsec - now.tv_nsec);
  if (left < 0) left = 0;
  int64_t ns = real.tv_nsec + left % 1000000000;
  struct timespec until {};
  until.tv_sec = real.tv_sec + left / 1000000000 + ns / 1000000000;
  until.tv_nsec = ns % 1000000000;
  return kiln_old_pthread_cond_timedwait(c, m, &until);
}

// _STAT_VER on x86-64 is 1.
__attribute__((visibility("hidden"))) int __wrap_fstat64(int fd, struct stat64* buf) {
  return kiln_old___fxstat64(1, fd, buf);
}
// stat and lstat are the kernel's newfstatat directly: on x86-64 its struct stat is glibc's. (Not
// the old __xstat/__lxstat: ASan's runtime intercepts those, and a binary that binds them to
// their compat version under ASan gets a dropped PLT relocation and does not load.)
__attribute__((visibility("hidden"))) int __wrap_stat(const char* path, struct stat* buf) {
  return static_cast<int>(syscall(SYS_newfstatat, AT_FDCWD, path, buf, 0));
}
__attribute__((visibility("hidden"))) int __wrap_lstat(const char* path, struct stat* buf) {
  return static_cast<int>(syscall(SYS_newfstatat, AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW));
}

// Read by the static libstdc++; 0 means "other threads may exist".
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;

__attribute__((visibility("hidden"))) uint32_t __wrap_arc4random() {
  uint32_t value = 0;
  auto* p = reinterpret_cast<unsigned char*>(&value);
  size_t got = 0;
  while (got < sizeof(value)) {
    const ssize_t n = getrandom(p + got, sizeof(value) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
    // EINTR: try again; anything else cannot happen for 4 bytes from the urandom pool.
  }
  return value;
}

__attribute__((visibility("hidden"))) int __wrap__dl_find_object(void* pc,
                                                                 struct dl_find_object* result) {
  struct Search {
    uintptr_t pc;
    struct dl_find_object* out;
    bool found;
  } search{reinterpret_cast<uintptr_t>(pc), result, false};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        bool inside = false;
        void* eh_frame = nullptr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD) {
            lo = start < lo ? start : lo;
            hi = start + ph.p_memsz > hi ? start + ph.p_memsz : hi;
            if (s->pc >= start && s->pc < start + ph.p_memsz) inside = true;
          } else if (ph.p_type == PT_GNU_EH_FRAME) {
            eh_frame = reinterpret_cast<void*>(start);
          }
        }
        if (!inside) return 0;
        std::memset(s->out, 0, sizeof(*s->out));
        s->out->dlfo_map_start = reinterpret_cast<void*>(lo);
        s->out->dlfo_map_end = reinterpret_cast<void*>(hi);
        s->out->dlfo_eh_frame = eh_frame;
        s->found = true;
        return 1;
      },
      &search);
  return search.found ? 0 : -1;
}

}  // extern "C"
