// The dynamic loader's lock, as the sampler's signal handler needs it.
//
// libunwind finds each frame's unwind rules through dl_iterate_phdr, which
// takes glibc's _dl_load_write_lock (a recursive pthread mutex inside ld.so's
// _rtld_global). A handler that interrupts a thread while another thread
// holds that lock back to back (an app or an unwinder looping over
// dl_iterate_phdr, a sanitizer's symbolizer) waited for it for seconds: the
// unlocking thread takes it again before the waiter wakes. The handler
// therefore takes the lock itself with trylock first, and cuts the sample to
// the interrupted PC where another thread holds it (docs/tracer.md).
#pragma once

#include <pthread.h>

namespace rtrace::tracer {

// Locates the lock: the recursive mutex in _rtld_global that this thread owns
// inside a dl_iterate_phdr callback and not outside it. Not async-signal-safe
// (call it before arming any timer). nullptr where it cannot be told apart
// (no _rtld_global symbol, another libc, zero or several candidates); `why`
// says which.
pthread_mutex_t* find_loader_lock(const char** why) noexcept;

// The handler's side, async-signal-safe. True when the calling thread may
// unwind now without waiting for the loader (or `lock` is nullptr: not found,
// the unwind may wait as it always did): it holds `lock` already (a
// recursive re-entry by libunwind costs nothing) or took it with trylock, in
// which case *taken is set and release_loader_lock() must follow. False when
// another thread holds it, or when the calling thread was interrupted inside
// its own unlock (owner still set, count already 0), where a nested lock
// would release the mutex under the interrupted unlock.
bool acquire_loader_lock(pthread_mutex_t* lock, int own_tid, bool* taken) noexcept;
// Gives back what acquire_loader_lock took (nothing unless *taken was set).
void release_loader_lock(pthread_mutex_t* lock, bool taken) noexcept;

// In a fork child, first thing: glibc 2.36 re-initialises the loader's other
// lock in the child but not this one, so a lock held by another thread of
// the parent at fork() stays held by a thread the child does not have, and
// the child's next dlopen waits forever. Re-initialises it where its owner is
// not the forking thread (`forking_tid`: its tid in the parent, which the
// lock's owner field still holds when that thread took it). True when reset.
bool reset_orphaned_loader_lock(pthread_mutex_t* lock, int forking_tid) noexcept;

}  // namespace rtrace::tracer
