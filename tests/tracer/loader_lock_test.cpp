// The loader's lock as the sampler's handler takes it (tracer/src/loader_lock.hpp).
#include <gtest/gtest.h>

#include "loader_lock.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <thread>

using namespace rtrace::tracer;

namespace {

pthread_mutex_t* found_lock() {
  const char* why = nullptr;
  pthread_mutex_t* lock = find_loader_lock(&why);
  EXPECT_NE(lock, nullptr) << (why ? why : "");
  return lock;
}

// Runs `body` once inside a dl_iterate_phdr callback, i.e. holding the loader's lock.
template <class Body>
void inside_dl_iterate_phdr(Body body) {
  dl_iterate_phdr(
      [](dl_phdr_info*, size_t, void* data) {
        (*static_cast<Body*>(data))();
        return 1;
      },
      &body);
}

// Another thread inside a dl_iterate_phdr callback, holding the loader's
// lock until leave() (or the end of the scope).
class ThreadInsideTheLoader {
 public:
  ThreadInsideTheLoader()
      : holder_([this] {
          inside_dl_iterate_phdr([this] {
            inside_ = true;
            while (!leave_) std::this_thread::yield();
          });
        }) {
    while (!inside_) std::this_thread::yield();
  }
  ~ThreadInsideTheLoader() { leave(); }
  void leave() {
    leave_ = true;
    if (holder_.joinable()) holder_.join();
  }

 private:
  std::atomic<bool> inside_{false}, leave_{false};
  std::thread holder_;
};

}  // namespace

TEST(LoaderLock, IsTheMutexDlIteratePhdrHolds) {
  pthread_mutex_t* lock = found_lock();
  ASSERT_NE(lock, nullptr);
  EXPECT_NE(lock->__data.__owner, gettid());
  int owner_inside = 0;
  inside_dl_iterate_phdr([&] { owner_inside = lock->__data.__owner; });
  EXPECT_EQ(owner_inside, gettid());
  EXPECT_EQ(found_lock(), lock);  // the same on a second look
}

TEST(LoaderLock, NotTakenWhileAnotherThreadIsInsideTheLoader) {
  pthread_mutex_t* lock = found_lock();
  ASSERT_NE(lock, nullptr);
  ThreadInsideTheLoader other;
  bool taken = true;
  EXPECT_FALSE(acquire_loader_lock(lock, gettid(), &taken)) << "the handler would wait for the loader";
  EXPECT_FALSE(taken);
  other.leave();
  // Free again: taken and given back, and dl_iterate_phdr works after it.
  ASSERT_TRUE(acquire_loader_lock(lock, gettid(), &taken));
  EXPECT_TRUE(taken);
  EXPECT_EQ(lock->__data.__owner, gettid());
  release_loader_lock(lock, taken);
  EXPECT_NE(lock->__data.__owner, gettid());
  int modules = 0;
  dl_iterate_phdr([](dl_phdr_info*, size_t, void* n) { return ++*static_cast<int*>(n), 0; }, &modules);
  EXPECT_GT(modules, 1);
}

TEST(LoaderLock, ReenteredByTheThreadThatHoldsIt) {
  pthread_mutex_t* lock = found_lock();
  ASSERT_NE(lock, nullptr);
  bool ok = false, taken = true;
  unsigned count_after = 0;
  inside_dl_iterate_phdr([&] {
    const unsigned before = lock->__data.__count;
    ok = acquire_loader_lock(lock, gettid(), &taken);
    release_loader_lock(lock, taken);
    count_after = lock->__data.__count - before;
  });
  EXPECT_TRUE(ok);
  EXPECT_FALSE(taken) << "held already: nothing to take";
  EXPECT_EQ(count_after, 0u);
}

// A signal between an unlock's `--count == 0` and its `owner = 0`: a nested
// lock and unlock would release the mutex under the interrupted unlock.
TEST(LoaderLock, NotTakenInsideTheThreadsOwnUnlock) {
  pthread_mutex_t m;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&m, &attr);
  ASSERT_EQ(pthread_mutex_lock(&m), 0);
  m.__data.__count = 0;  // the window, as the interrupted unlock left it
  bool taken = true;
  EXPECT_FALSE(acquire_loader_lock(&m, gettid(), &taken));
  EXPECT_FALSE(taken);
  m.__data.__count = 1;
  EXPECT_EQ(pthread_mutex_unlock(&m), 0);
  pthread_mutex_destroy(&m);
  pthread_mutexattr_destroy(&attr);
}

// Where the lock was not found, the handler unwinds as it always did.
TEST(LoaderLock, NoLockFoundMeansUnwindWithoutTakingOne) {
  bool taken = true;
  EXPECT_TRUE(acquire_loader_lock(nullptr, gettid(), &taken));
  EXPECT_FALSE(taken);
  release_loader_lock(nullptr, taken);
}

// Issue 45: a thread of the parent inside the loader at fork() leaves the
// child a lock held by a thread it does not have. The child's dlopen of a
// library not loaded yet waits for it forever; after the reset it loads.
TEST(LoaderLock, AForkChildGetsBackALockAnotherThreadHeldAtFork) {
  pthread_mutex_t* lock = found_lock();
  ASSERT_NE(lock, nullptr);
  ThreadInsideTheLoader other;
  const int parent_tid = gettid();
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);  // a hang ends the child by SIGALRM, which the parent reports
    if (!reset_orphaned_loader_lock(lock, parent_tid)) _exit(3);
    if (lock->__data.__owner != 0) _exit(4);
    void* lib = dlopen(FRESH_LIB, RTLD_NOW | RTLD_LOCAL);
    _exit(lib ? 0 : 5);
  }
  other.leave();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child hung in dlopen (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: not reset, 4: still owned, 5: dlopen failed";
}

TEST(LoaderLock, AFreeLockOrTheForkingThreadsOwnIsLeftAsItIs) {
  pthread_mutex_t* lock = found_lock();
  ASSERT_NE(lock, nullptr);
  EXPECT_FALSE(reset_orphaned_loader_lock(lock, gettid()));  // free
  bool reset = true;
  // Held by this (the "forking") thread: its own unlock follows.
  inside_dl_iterate_phdr([&] { reset = reset_orphaned_loader_lock(lock, gettid()); });
  EXPECT_FALSE(reset);
  EXPECT_FALSE(reset_orphaned_loader_lock(nullptr, gettid()));
}
