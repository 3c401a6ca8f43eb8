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

// Metrics mode, driven by the resource callbacks of cupti_trace.cpp.
void metrics_context_created(RankState& state, CUcontext ctx) noexcept;
void metrics_context_destroying(RankState& state, CUcontext ctx) noexcept;
void metrics_flush_all(RankState& state) noexcept;

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

}  // namespace rtrace::tracer
