// The CUPTI layer: activity trace (all CUDA modes) and range-profiler metrics
// (cuda-metrics). Started from InitializeInjection.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include "rank_state.hpp"

namespace rtrace::tracer {

// Subscribes to CUPTI; returns false (after logging why) when CUPTI is
// missing or refuses. Idempotent.
bool start_cupti(RankState& state) noexcept;

// Metrics mode (cupti_metrics.cpp), driven by the resource and launch
// callbacks of cupti_trace.cpp: one profiled context per device at a time,
// the range buffer restarted when full.
void metrics_context_created(RankState& state, CUcontext ctx) noexcept;
void metrics_context_destroying(RankState& state, CUcontext ctx) noexcept;
// At the entry of a kernel launch into `ctx` (the context it will run in).
void metrics_before_launch(RankState& state, CUcontext ctx) noexcept;
void metrics_flush_all(RankState& state) noexcept;
// A green partition decides which context is profiled: contexts created
// before the green context (its parent primary among them) are held; then
// only the green context is profiled, or, if it could not be made, the held ones.
void metrics_hold_for_green() noexcept;
void metrics_green_ready(RankState& state, CUcontext green) noexcept;
void metrics_green_failed(RankState& state) noexcept;

// The driver API's kernel launch entry points (cuLaunchKernel, _ptsz, Ex,
// cooperative, the legacy cuLaunch*): one profiled range each.
bool is_kernel_launch(CUpti_CallbackId cbid) noexcept;

// Registers the process's final GPU flush as an exit handler now. Called after
// each CUPTI set-up step that may register CUPTI's own exit-time teardown
// (loading and subscribing; the profiler's initialisation), so the last one
// registered runs first at exit, before any of CUPTI's. Idempotent at exit.
void register_gpu_exit_flush() noexcept;

// The subscriber start_cupti holds (nullptr before).
CUpti_SubscriberHandle subscriber_handle() noexcept;

// RTRACE_GREEN_CTX_SMS (cupti_green.cpp): driver-API callbacks that make a
// green context of `sms` SMs current at the entry of the app's driver calls.
bool start_green_partition(RankState& state, int sms) noexcept;
void green_on_driver_api(RankState& state, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept;
// The green context when it is current on this thread (the one thread it
// belongs to), else nullptr.
CUcontext green_context_of_this_thread() noexcept;
// CUPTI_CBID_RESOURCE_MODULE_LOADED: flags a module with dynamic parallelism.
void green_on_module_loaded(RankState& state, const CUpti_ResourceData* data) noexcept;

}  // namespace rtrace::tracer
