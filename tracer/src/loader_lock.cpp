#include "loader_lock.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rtrace::tracer {

namespace {

struct Region {
  const unsigned char* base = nullptr;
  std::size_t size = 0;
};

// Offsets (pthread_mutex_t-aligned) of the recursive mutexes in `r` that `tid` owns.
std::vector<std::size_t> owned_recursive_mutexes(const Region& r, pid_t tid) {
  std::vector<std::size_t> out;
  const std::size_t align = alignof(pthread_mutex_t);
  for (std::size_t off = 0; off + sizeof(pthread_mutex_t) <= r.size; off += align) {
    const auto* m = reinterpret_cast<const pthread_mutex_t*>(r.base + off);
    if (m->__data.__owner == tid && m->__data.__count >= 1 && m->__data.__lock != 0 &&
        (m->__data.__kind & 3) == PTHREAD_MUTEX_RECURSIVE_NP)
      out.push_back(off);
  }
  return out;
}

struct Probe {
  Region region;
  pid_t tid = 0;
  std::vector<std::size_t> inside;
  bool ran = false;
};

}  // namespace

pthread_mutex_t* find_loader_lock(const char** why) noexcept {
  auto fail = [&](const char* reason) -> pthread_mutex_t* {
    if (why) *why = reason;
    return nullptr;
  };
  try {
    void* global = dlsym(RTLD_DEFAULT, "_rtld_global");
    if (!global) return fail("ld.so exports no _rtld_global");
    Dl_info info{};
    void* entry = nullptr;
    if (dladdr1(global, &info, &entry, RTLD_DL_SYMENT) == 0 || !entry ||
        static_cast<const ElfW(Sym)*>(entry)->st_size == 0)
      return fail("the size of _rtld_global is unknown");
    const auto* sym = static_cast<const ElfW(Sym)*>(entry);
    Probe probe;
    probe.region = Region{static_cast<const unsigned char*>(global), static_cast<std::size_t>(sym->st_size)};
    probe.tid = gettid();
    // Held outside the callback too (a caller inside dlopen holds the other
    // recursive lock): not the one dl_iterate_phdr takes.
    const std::vector<std::size_t> outside = owned_recursive_mutexes(probe.region, probe.tid);
    dl_iterate_phdr(
        [](dl_phdr_info*, size_t, void* data) {
          auto* p = static_cast<Probe*>(data);
          if (p->ran) return 1;
          p->ran = true;
          try {
            p->inside = owned_recursive_mutexes(p->region, p->tid);
          } catch (...) {
          }
          return 1;
        },
        &probe);
    std::vector<std::size_t> candidates;
    for (std::size_t off : probe.inside)
      if (std::find(outside.begin(), outside.end(), off) == outside.end()) candidates.push_back(off);
    if (candidates.size() != 1) return fail(candidates.empty() ? "no recursive mutex of ld.so is held inside dl_iterate_phdr"
                                                               : "several recursive mutexes of ld.so are held inside dl_iterate_phdr");
    auto* lock = reinterpret_cast<pthread_mutex_t*>(const_cast<unsigned char*>(probe.region.base) + candidates[0]);
    if (lock->__data.__owner == probe.tid) return fail("ld.so's lock is still held after dl_iterate_phdr");
    return lock;
  } catch (...) {
    return fail("out of memory");
  }
}

bool acquire_loader_lock(pthread_mutex_t* lock, int own_tid, bool* taken) noexcept {
  *taken = false;
  if (!lock) return true;  // not found: unwind as before
  const int owner = __atomic_load_n(&lock->__data.__owner, __ATOMIC_RELAXED);
  if (owner == own_tid) {
    // Only this (interrupted) thread writes the count while it owns the lock.
    return __atomic_load_n(&lock->__data.__count, __ATOMIC_RELAXED) > 0;
  }
  if (pthread_mutex_trylock(lock) != 0) return false;
  *taken = true;
  return true;
}

void release_loader_lock(pthread_mutex_t* lock, bool taken) noexcept {
  if (taken) pthread_mutex_unlock(lock);
}

bool reset_orphaned_loader_lock(pthread_mutex_t* lock, int forking_tid) noexcept {
  if (!lock) return false;
  const int owner = lock->__data.__owner;
  if (owner == 0 || owner == forking_tid) return false;  // free, or the forking thread's own (it unlocks it)
  // What glibc does for the loader's other lock in the child: only this
  // thread runs, so nothing races with the re-initialisation.
  const pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  *lock = fresh;
  return true;
}

}  // namespace rtrace::tracer
