// The PMU path of the counting pass (RTRACE_COUNTS=pmu or auto in the app's
// environment, set by `rtrace run --counts pmu|auto`): every thread of the
// process counts the events of its core PMU (pmu_events.hpp) from its start,
// and the rank's records get the count tables (run-file schema 1.7):
// counts_info (source "pmu:<pmu> <events>", status ok / partial /
// unavailable, a note naming what is missing or why) and one counts row per
// thread (function_id -1: the PMU has no per-function split), NaN for what
// the PMU cannot see. Without a PMU (VMs, containers) the status is
// "unavailable" with the reason; the application never notices.
#pragma once

#include "rtrace/store/run_file.hpp"

#include <string>

namespace rtrace::tracer::pmu {

// On the main thread at start-up. `mode` is RTRACE_COUNTS ("pmu", "auto";
// anything else does nothing). Returns a line for the rank's log ("" when not requested).
std::string start(const std::string& mode) noexcept;
bool active() noexcept;
// In each new thread before its start routine (the pthread_create wrapper);
// its counters are read and closed when the thread exits.
void thread_begin() noexcept;
// In a fork child: the inherited counters count the parent; the child counts
// its own thread from here.
void after_fork() noexcept;
// Adds counts_info and the counts rows as of now (nothing when not requested).
// `blocking=false` (a fatal signal) skips them if another thread holds the state.
void fill(store::RankRecords& rec, bool blocking) noexcept;

}  // namespace rtrace::tracer::pmu
