// Per-process trace files: rank-<rank>-<pid>.h5, written via temp + rename so
// a reader only ever sees a whole file (or none).
#pragma once

#include "rtrace/store/run_file.hpp"

#include <string>

namespace rtrace::tracer {

// "<dir>/rank-<rank>-<pid>.h5"
std::string rank_file_path(const std::string& dir, std::int64_t rank, std::int64_t pid);

// Writes one trace file holding /ranks/rNNNNNN for `records` and returns its
// path. Throws store::Error (or std::runtime_error) on failure; the temp file
// is removed then, and no partial file is ever visible under the final name.
std::string write_rank_file(const std::string& dir, const store::RankRecords& records);

// The process's command line from /proc/self/cmdline, space separated.
std::string own_command_line();


}  // namespace rtrace::tracer
