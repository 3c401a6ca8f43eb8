#include "exit_watchdog.hpp"

#include <unistd.h>

#include <chrono>

namespace rtrace::tracer {

const char* to_string(ExitStep step) noexcept {
  switch (step) {
    case ExitStep::Start: return "start";
    case ExitStep::Gpu: return "flushing the GPU records";
    case ExitStep::Records: return "building the records and symbolising the samples";
    case ExitStep::Write: return "writing the rank file";
    case ExitStep::Done: return "done";
    case ExitStep::TakenOver: return "taken over by the watchdog";
  }
  return "?";
}

void wait_to_be_ended() noexcept {
  for (;;) pause();
}

ExitWatchdog::ExitWatchdog(double bound_s, Expiry on_expiry, void* arg) noexcept
    : bound_s_(bound_s), on_expiry_(on_expiry), arg_(arg) {
  try {
    thread_ = std::thread([this] { watch(); });
  } catch (...) {
    // No thread to spare: the exit path runs as it did, unbounded.
  }
}

ExitWatchdog::~ExitWatchdog() {
  int cur = step_.load();
  while (cur != static_cast<int>(ExitStep::TakenOver) && !step_.compare_exchange_weak(cur, static_cast<int>(ExitStep::Done))) {
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  done_.notify_all();
  if (thread_.joinable()) {
    try {
      thread_.join();
    } catch (...) {
    }
  }
}

bool ExitWatchdog::enter(ExitStep step) noexcept {
  int cur = step_.load();
  while (cur != static_cast<int>(ExitStep::TakenOver))
    if (step_.compare_exchange_weak(cur, static_cast<int>(step))) return true;
  return false;
}

void ExitWatchdog::watch() noexcept {
  try {
    std::unique_lock<std::mutex> lock(mutex_);
    if (done_.wait_for(lock, std::chrono::duration<double>(bound_s_), [this] { return finished_; })) return;
  } catch (...) {
    return;
  }
  int cur = step_.load();
  while (cur != static_cast<int>(ExitStep::Done)) {
    if (step_.compare_exchange_weak(cur, static_cast<int>(ExitStep::TakenOver))) {
      on_expiry_(static_cast<ExitStep>(cur), arg_);  // ends the process
      return;
    }
  }
}

}  // namespace rtrace::tracer
