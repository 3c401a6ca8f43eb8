// The CUPTI layer: activity trace (all CUDA modes) and range-profiler metrics
// (cuda-metrics). Started from InitializeInjection.
#pragma once

#include <cuda.h>

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

}  // namespace rtrace::tracer
