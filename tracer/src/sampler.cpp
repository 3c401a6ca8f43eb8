#include "sampler.hpp"

#include "loader_lock.hpp"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

namespace rtrace::tracer {

namespace {

constexpr std::uint32_t kEntries = 4096;   // distinct stacks per thread (power of two)
constexpr std::uint32_t kPcs = 65536;      // PCs kept per thread over all distinct stacks
constexpr int kMaxThreads = 1024;          // threads sampled per process; later ones are not
constexpr std::uint64_t kMagic = 0x7274726163657331ull;
// The most periods one sample may stand for (see on_sample): on a quiet
// machine each signal comes within a period or two of the last; time-sliced
// with other processes, every 2-4 periods.
constexpr std::int64_t kMaxSampleWeight = 8;

enum : int { kOff = 0, kRunning = 1, kStopped = 2, kBackedOff = 3 };

// A distinct stack in a thread's table. Written only by that thread's signal
// handler; `state` (release) publishes the other fields to collect().
struct Entry {
  std::atomic<std::uint32_t> state;  // 0 empty, 1 filled
  std::uint32_t depth;
  std::uint32_t pc_offset;
  std::uint32_t pad;
  std::uint64_t hash;
  std::atomic<std::int64_t> count;
};

// One thread's samples: mapped with mmap before the timer is armed, never
// freed while the process runs (exited threads' samples are still reported).
struct ThreadBuffer {
  std::uint64_t magic;
  std::atomic<ThreadBuffer*> next;
  int index;
  std::atomic<bool> armed;
  bool armed_before_exec;
  timer_t timer;
  std::atomic<std::uint32_t> pcs_used;
  std::atomic<std::int64_t> samples;
  std::atomic<std::int64_t> dropped;
  std::atomic<std::int64_t> handler_ns;  // CPU time inside on_sample (unwind + record)
  std::atomic<std::int64_t> cut_at_loader;  // samples kept as the PC alone: the loader was busy
  std::atomic<std::int64_t> cut_at_fork;    // samples kept as the PC alone: a fork() was under way
  // The thread's CPU time (ns) up to which its samples are weighed (set when
  // armed, advanced by each sample), and the part of a period carried over.
  // Written by the thread itself; read by stop() for the unsampled tail.
  std::atomic<std::int64_t> weighed_to_ns;
  std::atomic<std::int64_t> carry_ns;
  std::atomic<pid_t> tid;
  std::atomic<bool> tail_counted;        // its unsampled tail is in `dropped`
  Entry entries[kEntries];
  std::uintptr_t pcs[kPcs];
};

std::atomic<int> g_state{kOff};
std::atomic<int> g_signal{0};
std::atomic<ThreadBuffer*> g_head{nullptr};
std::atomic<int> g_next_index{0};
std::atomic<std::int64_t> g_unsampled_threads{0};
std::int64_t g_period_ns = 0;
// glibc's loader lock (loader_lock.hpp); nullptr: not found, unwinds may wait for it.
pthread_mutex_t* g_loader_lock = nullptr;
double g_hz = 0;
// Fork quiescing (prepare_fork): while a fork is pending no handler starts an
// unwind, and the forking thread waits for those already inside one, so no
// thread of the parent holds the loader's lock for the sampler at the moment
// of fork. A child inherits the lock as it was then, held by a thread it does
// not have: the child's first dlopen (its exit path's) waited forever.
std::atomic<int> g_fork_pending{0};
std::atomic<int> g_in_unwind{0};
std::atomic<std::int64_t> g_fork_waits_cut{0};  // prepare_fork stopped waiting at its bound
thread_local pid_t t_forking_tid = 0;           // this thread's tid when it last forked
pthread_key_t g_key;
bool g_key_made = false;
// Leaked on purpose: the exit handler that reads them may run after this
// library's static destructors (it is registered before them).
std::mutex* const g_notes_mutex = new std::mutex;
std::vector<std::string>* const g_notes = new std::vector<std::string>;
thread_local ThreadBuffer* t_buffer = nullptr;

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
SigactionFn real_sigaction_fn() noexcept {
  static SigactionFn fn = [] {
    auto f = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
    return f ? f : &::sigaction;
  }();
  return fn;
}

// A per-thread counter summed over every sampled thread.
std::int64_t sum_over_threads(std::atomic<std::int64_t> ThreadBuffer::*counter) noexcept {
  std::int64_t total = 0;
  for (ThreadBuffer* b = g_head.load(); b; b = b->next.load()) total += (b->*counter).load(std::memory_order_relaxed);
  return total;
}

void note(std::string text) noexcept {
  try {
    std::lock_guard<std::mutex> lock(*g_notes_mutex);
    if (g_notes->size() < 50) g_notes->push_back(std::move(text));
  } catch (...) {
  }
}

std::uint64_t hash_pcs(const std::uintptr_t* pcs, int n) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; ++i) {
    h ^= static_cast<std::uint64_t>(pcs[i]);
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

// Async-signal-safe: only this thread's handler writes its table.
void record(ThreadBuffer* b, const std::uintptr_t* pcs, int n, std::int64_t weight) noexcept {
  const std::uint64_t h = hash_pcs(pcs, n);
  for (std::uint32_t probe = 0; probe < 64; ++probe) {
    Entry& e = b->entries[(h + probe) & (kEntries - 1)];
    if (e.state.load(std::memory_order_acquire) == 1) {
      if (e.hash != h || e.depth != static_cast<std::uint32_t>(n)) continue;
      if (std::memcmp(&b->pcs[e.pc_offset], pcs, sizeof(std::uintptr_t) * static_cast<std::size_t>(n)) != 0) continue;
      e.count.fetch_add(weight, std::memory_order_relaxed);
      b->samples.fetch_add(weight, std::memory_order_relaxed);
      return;
    }
    const std::uint32_t off = b->pcs_used.load(std::memory_order_relaxed);
    if (off + static_cast<std::uint32_t>(n) > kPcs) break;
    std::memcpy(&b->pcs[off], pcs, sizeof(std::uintptr_t) * static_cast<std::size_t>(n));
    b->pcs_used.store(off + static_cast<std::uint32_t>(n), std::memory_order_relaxed);
    e.hash = h;
    e.depth = static_cast<std::uint32_t>(n);
    e.pc_offset = off;
    e.count.store(weight, std::memory_order_relaxed);
    e.state.store(1, std::memory_order_release);
    b->samples.fetch_add(weight, std::memory_order_relaxed);
    return;
  }
  b->dropped.fetch_add(weight, std::memory_order_relaxed);
}

void on_sample(int, siginfo_t* si, void* context) {
  if (!si || si->si_code != SI_TIMER) return;  // only our timers, not a kill() from elsewhere
  auto* b = static_cast<ThreadBuffer*>(si->si_value.sival_ptr);
  if (!b || b->magic != kMagic || g_state.load(std::memory_order_relaxed) != kRunning) return;
  const int saved_errno = errno;
  // The handler's own cost, for the rank's log: the thread's CPU time
  // (clock_gettime is async-signal-safe), not the monotonic clock, whose
  // reading on a loaded machine counted the preemptions inside the handler
  // (4-9% "own account" on GROMACS runs under a load of 10, 1% in CPU time).
  timespec entered{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &entered);
  // Each sample weighs the thread's CPU time since the last one, in periods.
  // The kernel checks CPU-time timers only at ticks where the thread runs:
  // time-sliced with other processes (2 busy loops on 2 cores, kernel 6.18),
  // a thread got 31-49 signals for 112 periods and a 50 ms thread often none,
  // and 1 + si_overrun still missed a fifth of the time. The CPU clock does not.
  const std::int64_t now_ns = entered.tv_sec * 1000000000LL + entered.tv_nsec;
  std::int64_t carry = b->carry_ns.load(std::memory_order_relaxed) + now_ns -
                       b->weighed_to_ns.load(std::memory_order_relaxed);
  b->weighed_to_ns.store(now_ns, std::memory_order_relaxed);
  std::int64_t weight = g_period_ns > 0 ? carry / g_period_ns : 1;
  if (weight > 0) carry -= weight * g_period_ns;
  b->carry_ns.store(carry, std::memory_order_relaxed);
  // A signal after a long gap cannot say where the gap's time went (a thread
  // with no signal through a 0.4 s serial part put it all on the loop it ran
  // next): beyond kMaxSampleWeight periods it is dropped, visibly unsampled.
  if (weight > kMaxSampleWeight) {
    b->dropped.fetch_add(weight - kMaxSampleWeight, std::memory_order_relaxed);
    weight = kMaxSampleWeight;
  }
  if (weight <= 0) {  // a signal within a period of the last sample: its time waits for the next
    errno = saved_errno;
    return;
  }
  void* frames[kMaxSampleDepth + 4];
  int n = 0;
  bool lock_taken = false;
  // Announced before the fork check (both seq_cst): either prepare_fork sees
  // this unwind and waits for it, or this handler sees the pending fork.
  g_in_unwind.fetch_add(1);
  if (g_fork_pending.load() > 0) {
    b->cut_at_fork.fetch_add(weight, std::memory_order_relaxed);
  } else if (acquire_loader_lock(g_loader_lock, b->tid.load(std::memory_order_relaxed), &lock_taken)) {
    n = unw_backtrace(frames, kMaxSampleDepth + 4);
    release_loader_lock(g_loader_lock, lock_taken);
  } else {
    b->cut_at_loader.fetch_add(weight, std::memory_order_relaxed);
  }
  g_in_unwind.fetch_sub(1);
  std::uintptr_t ip = 0;
  if (context) ip = static_cast<std::uintptr_t>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
  int first = -1;
  for (int i = 0; i < n && i < 4; ++i)
    if (reinterpret_cast<std::uintptr_t>(frames[i]) == ip) {
      first = i;
      break;
    }
  std::uintptr_t pcs[kMaxSampleDepth];
  int depth = 0;
  if (first < 0) {  // not unwound, or not across the signal frame: keep the interrupted PC alone
    if (ip) pcs[depth++] = ip;
  } else {
    for (int i = first; i < n && depth < kMaxSampleDepth; ++i) pcs[depth++] = reinterpret_cast<std::uintptr_t>(frames[i]);
  }
  if (depth > 0) record(b, pcs, depth, weight);
  else b->dropped.fetch_add(weight, std::memory_order_relaxed);
  timespec left{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &left);
  b->handler_ns.fetch_add((left.tv_sec - entered.tv_sec) * 1000000000LL + (left.tv_nsec - entered.tv_nsec),
                          std::memory_order_relaxed);
  errno = saved_errno;
}

timespec to_timespec(std::int64_t ns) noexcept {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  return ts;
}

std::int64_t clock_ns(clockid_t clock) noexcept {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

std::int64_t thread_cpu_ns() noexcept { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// Another thread's CPU time (ns) from /proc/self/task/<tid>/schedstat, the
// same sum the thread's CPU clock reads; -1 when it cannot be read (the
// thread is gone). Async-signal-safe: stop() runs at a fatal signal too.
std::int64_t task_cpu_ns(pid_t tid) noexcept {
  char path[64] = "/proc/self/task/";
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(tid); n == 0 || v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  std::size_t at = std::strlen(path);
  while (n > 0) path[at++] = digits[--n];
  std::memcpy(path + at, "/schedstat", sizeof "/schedstat");
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[64];
  const ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  if (got <= 0 || text[0] < '0' || text[0] > '9') return -1;
  std::int64_t ns = 0;
  for (ssize_t i = 0; i < got && text[i] >= '0' && text[i] <= '9'; ++i) ns = ns * 10 + (text[i] - '0');
  return ns;
}

// The CPU time a thread ran after its last sample, in whole periods, joins
// its dropped samples: time the samples do not show (a tail under a period
// is the sampling's own granularity). cpu_ns < 0: unknown, nothing added.
void count_tail(ThreadBuffer* b, std::int64_t cpu_ns) noexcept {
  if (!b || g_period_ns <= 0 || cpu_ns < 0 || b->tail_counted.exchange(true)) return;
  const std::int64_t tail =
      b->carry_ns.load(std::memory_order_relaxed) + cpu_ns - b->weighed_to_ns.load(std::memory_order_relaxed);
  // Weighed from here on: a timer signal still pending adds nothing twice.
  b->weighed_to_ns.store(cpu_ns, std::memory_order_relaxed);
  b->carry_ns.store(0, std::memory_order_relaxed);
  if (tail >= g_period_ns) b->dropped.fetch_add(tail / g_period_ns, std::memory_order_relaxed);
}

bool arm(ThreadBuffer* b) noexcept {
  sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = g_signal.load();
  sev.sigev_value.sival_ptr = b;
  sev.sigev_notify_thread_id = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t timer;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &timer) != 0) return false;
  b->tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_relaxed);
  b->weighed_to_ns.store(thread_cpu_ns(), std::memory_order_relaxed);
  b->carry_ns.store(0, std::memory_order_relaxed);
  itimerspec its;
  its.it_interval = to_timespec(g_period_ns);
  its.it_value = to_timespec(g_period_ns);
  if (timer_settime(timer, 0, &its, nullptr) != 0) {
    timer_delete(timer);
    return false;
  }
  b->timer = timer;
  b->armed.store(true);
  return true;
}

// Deletes the thread's timer; true where it was armed (its tail is then due).
bool disarm(ThreadBuffer* b) noexcept {
  if (!b || !b->armed.exchange(false)) return false;
  timer_delete(b->timer);
  return true;
}

ThreadBuffer* new_buffer() noexcept {
  void* mem = mmap(nullptr, sizeof(ThreadBuffer), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  // Anonymous memory is zero: every entry empty, every counter 0.
  auto* b = static_cast<ThreadBuffer*>(mem);
  b->magic = kMagic;
  return b;
}

void on_thread_key_destroyed(void* p) {
  auto* b = static_cast<ThreadBuffer*>(p);
  if (disarm(b)) count_tail(b, thread_cpu_ns());  // on the thread itself: its own clock
}

void begin_thread() noexcept {
  if (g_state.load() != kRunning || t_buffer) return;
  const int index = g_next_index.fetch_add(1);
  if (index >= kMaxThreads) {
    if (g_unsampled_threads.fetch_add(1) == 0)
      note("warning: sampling: more than " + std::to_string(kMaxThreads) + " threads; later threads are not sampled");
    return;
  }
  ThreadBuffer* b = new_buffer();
  if (!b) {
    g_unsampled_threads.fetch_add(1);
    return;
  }
  b->index = index;
  ThreadBuffer* head = g_head.load();
  do b->next.store(head);
  while (!g_head.compare_exchange_weak(head, b));
  t_buffer = b;
  if (g_key_made) pthread_setspecific(g_key, b);
  if (!arm(b)) note(std::string("warning: sampling: timer_create for a thread failed: ") + std::strerror(errno));
}

// Upper bound of prepare_fork's wait: a handler's unwind takes microseconds,
// but a descheduled thread can sit inside one for a time slice or more.
constexpr std::int64_t kForkWaitNs = 200 * 1000 * 1000;

void on_fork_prepare() {
  t_forking_tid = static_cast<pid_t>(syscall(SYS_gettid));
  g_fork_pending.fetch_add(1);
  if (g_in_unwind.load() == 0) return;
  const std::int64_t start = clock_ns(CLOCK_MONOTONIC);
  const timespec nap{0, 20 * 1000};
  while (g_in_unwind.load() > 0) {
    if (clock_ns(CLOCK_MONOTONIC) - start > kForkWaitNs) {
      g_fork_waits_cut.fetch_add(1);  // the child's loader-lock check covers what is left
      return;
    }
    nanosleep(&nap, nullptr);
  }
}

void on_fork_parent() { g_fork_pending.fetch_sub(1); }

void on_fork_child() {
  // Whatever other threads of the parent were doing is gone with them.
  g_fork_pending.store(0);
  g_in_unwind.store(0);
  new (g_notes_mutex) std::mutex();
  g_notes->clear();
  g_fork_waits_cut.store(0);
  // The loader's lock as the fork left it: held by a thread of the parent
  // (the app's own dl_iterate_phdr, or an unwind prepare_fork stopped waiting
  // for) it would stop the child's first dlopen forever.
  if (g_loader_lock && reset_orphaned_loader_lock(g_loader_lock, t_forking_tid))
    note("warning: fork: the dynamic loader's lock was held by another thread of the parent at fork(); "
         "released in the child so that its dlopen and dl_iterate_phdr do not wait forever");
  if (g_state.load() != kRunning) return;
  // Only this thread exists in the child and timers are not inherited: the
  // parent's tables are dropped and this thread starts a fresh one.
  ThreadBuffer* b = g_head.exchange(nullptr);
  while (b) {
    ThreadBuffer* next = b->next.load();
    munmap(b, sizeof(ThreadBuffer));
    b = next;
  }
  t_buffer = nullptr;
  g_next_index.store(0);
  g_unsampled_threads.store(0);
  begin_thread();
}

int choose_signal() noexcept {
  sigset_t blocked;
  sigemptyset(&blocked);
  pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
  for (int sig = SIGRTMAX - 1; sig >= SIGRTMIN + 2; --sig) {
    struct sigaction cur;
    std::memset(&cur, 0, sizeof cur);
    if (real_sigaction_fn()(sig, nullptr, &cur) != 0) continue;
    if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;  // the app's or a library's
    if (sigismember(&blocked, sig)) continue;
    return sig;
  }
  return 0;
}

}  // namespace

int Sampler::real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) noexcept {
  return real_sigaction_fn()(sig, act, old);
}

bool Sampler::start(double hz, std::string* why) noexcept {
  if (!(hz > 0)) {
    if (why) *why = "sampling off";
    return false;
  }
  if (g_state.load() != kOff) {
    if (why) *why = "already started";
    return false;
  }
  if (hz > 10000) hz = 10000;
  const int sig = choose_signal();
  if (sig == 0) {
    if (why) *why = "no free real-time signal (all have handlers or are blocked)";
    return false;
  }
  g_hz = hz;
  g_period_ns = static_cast<std::int64_t>(std::llround(1e9 / hz));
  g_signal.store(sig);
  // No cache of unwind rules in libunwind: its global cache holds a mutex
  // across dl_iterate_phdr on a miss, so a handler waiting there for the
  // loader's lock and a thread interrupted inside dl_iterate_phdr (the app's
  // own call, an unwinder's, a sanitizer's symbolizer), whose handler then
  // waits for that mutex, hung each other. Without the cache no mutex is
  // taken, and the loader's lock is recursive: the interrupted thread
  // re-enters it. (UNW_CACHE_PER_THREAD would take none either, but Debian's
  // libunwind 1.6 turns it into the global cache.) The cost, measured on
  // LAMMPS: 7 us a sample instead of 1 us, 0.2 % of a thread's CPU at the
  // default 250 Hz.
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_NONE);
  // Nor does the handler wait for the loader's lock itself: where another
  // thread holds it, the sample keeps the interrupted PC (loader_lock.hpp).
  const char* no_lock = nullptr;
  g_loader_lock = find_loader_lock(&no_lock);
  if (!g_loader_lock)
    note(std::string("info: sampling: the dynamic loader's lock was not found (") + (no_lock ? no_lock : "?") +
         "): a sample waits while another thread is inside dl_iterate_phdr or dlopen");
  // Resolve libunwind's tables and our own code now, outside any handler.
  void* warm[4];
  unw_backtrace(warm, 4);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (real_sigaction_fn()(sig, &sa, nullptr) != 0) {
    if (why) *why = std::string("sigaction: ") + std::strerror(errno);
    return false;
  }
  if (!g_key_made) g_key_made = pthread_key_create(&g_key, on_thread_key_destroyed) == 0;
  static bool atfork = false;
  if (!atfork) atfork = pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child) == 0;
  g_state.store(kRunning);
  begin_thread();
  if (!t_buffer || !t_buffer->armed.load()) {
    g_state.store(kOff);
    if (why) *why = std::string("timer_create(CLOCK_THREAD_CPUTIME_ID) failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool Sampler::running() noexcept { return g_state.load() == kRunning; }

void Sampler::thread_begin() noexcept { begin_thread(); }
void Sampler::thread_end() noexcept {
  if (disarm(t_buffer)) count_tail(t_buffer, thread_cpu_ns());
}

void Sampler::before_exec() noexcept {
  if (ThreadBuffer* b = t_buffer) {
    b->armed_before_exec = b->armed.load();
    disarm(b);
  }
}

void Sampler::after_failed_exec() noexcept {
  ThreadBuffer* b = t_buffer;
  if (b && b->armed_before_exec && g_state.load() == kRunning) arm(b);
}

bool Sampler::is_sample_signal(int sig) noexcept {
  const int s = g_signal.load();
  return s != 0 && sig == s && g_state.load() != kOff;
}

void Sampler::back_off(const std::string& why) noexcept {
  int expected = kRunning;
  if (!g_state.compare_exchange_strong(expected, kBackedOff)) return;
  for (ThreadBuffer* b = g_head.load(); b; b = b->next.load()) disarm(b);
  note("warning: sampling stopped: " + why);
}

void Sampler::stop() noexcept {
  int expected = kRunning;
  if (!g_state.compare_exchange_strong(expected, kStopped)) return;
  for (ThreadBuffer* b = g_head.load(); b; b = b->next.load()) {
    // Threads still alive: what they ran since their last sample.
    if (disarm(b)) count_tail(b, b == t_buffer ? thread_cpu_ns() : task_cpu_ns(b->tid.load(std::memory_order_relaxed)));
  }
}

std::vector<ThreadSamples> Sampler::collect() {
  std::vector<ThreadSamples> out;
  for (ThreadBuffer* b = g_head.load(); b; b = b->next.load()) {
    ThreadSamples t;
    t.thread = b->index;
    for (std::uint32_t i = 0; i < kEntries; ++i) {
      const Entry& e = b->entries[i];
      if (e.state.load(std::memory_order_acquire) != 1) continue;
      SampledStack s;
      s.pcs.assign(&b->pcs[e.pc_offset], &b->pcs[e.pc_offset] + e.depth);
      s.count = e.count.load(std::memory_order_relaxed);
      t.stacks.push_back(std::move(s));
    }
    if (!t.stacks.empty()) out.push_back(std::move(t));
  }
  return out;
}

store::SamplingRow Sampler::info() noexcept {
  store::SamplingRow row;
  std::memset(&row, 0, sizeof row);
  const int st = g_state.load();
  row.rate_hz = st == kOff ? 0 : g_hz;
  row.period_s = st == kOff ? 0 : static_cast<double>(g_period_ns) * 1e-9;
  store::set_str(row.clock, st == kOff ? "off" : "thread-cputime");
  store::set_str(row.unwinder, "libunwind");
  row.signal = st == kOff ? 0 : g_signal.load();
  row.max_depth = kMaxSampleDepth;
  for (ThreadBuffer* b = g_head.load(); b; b = b->next.load()) {
    ++row.threads;
    row.samples += b->samples.load(std::memory_order_relaxed);
    row.dropped += b->dropped.load(std::memory_order_relaxed);
  }
  store::set_str(row.status, st == kOff ? "off" : st == kBackedOff ? "backed-off" : "ok");
  return row;
}

double Sampler::handler_seconds() noexcept {
  return static_cast<double>(sum_over_threads(&ThreadBuffer::handler_ns)) * 1e-9;
}

std::int64_t Sampler::thread_handler_ns() noexcept {
  const ThreadBuffer* b = t_buffer;
  return b ? b->handler_ns.load(std::memory_order_relaxed) : 0;
}

std::vector<std::string> Sampler::take_notes() {
  std::lock_guard<std::mutex> lock(*g_notes_mutex);
  std::vector<std::string> out;
  out.swap(*g_notes);
  const std::int64_t at_fork = sum_over_threads(&ThreadBuffer::cut_at_fork);
  if (at_fork > 0)
    out.push_back("info: sampling: " + std::to_string(at_fork) +
                  " sample(s) kept only the interrupted function, not its callers: they came while a thread forked "
                  "(no unwind may hold the loader's lock across fork())");
  if (g_fork_waits_cut.load() > 0)
    out.push_back("warning: sampling: " + std::to_string(g_fork_waits_cut.load()) +
                  " fork(s) went ahead while a sample's unwind was still running after 0.2 s");
  const std::int64_t cut = sum_over_threads(&ThreadBuffer::cut_at_loader);
  if (cut > 0)
    out.push_back("info: sampling: " + std::to_string(cut) +
                  " sample(s) kept only the interrupted function, not its callers: another thread held the dynamic "
                  "loader's lock (dl_iterate_phdr, dlopen), and waiting for it would have stalled the thread");
  if (g_unsampled_threads.load() > 0)
    out.push_back("warning: sampling: " + std::to_string(g_unsampled_threads.load()) + " thread(s) not sampled");
  return out;
}

}  // namespace rtrace::tracer
