// Checks a file against the machine-readable schema (schemas/rtrace-v1.json,
// compiled in) and lists every deviation.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rtrace::store {

struct ValidationReport {
  enum class Verdict { Valid = 0, Invalid = 1, Unreadable = 2 };
  Verdict verdict = Verdict::Valid;
  std::string file_kind;                // "run", "ert", "trace"
  std::string schema_version;
  std::string fatal;                    // set when Unreadable: one line
  std::vector<std::string> deviations;  // one line each: "<path>: <problem>"
  std::size_t points_total = 0, points_complete = 0;
  bool library_failure = false;         // Unreadable because libhdf5 crashed or hung on the file
};

// Reads every object and every table row of the file in this process.
ValidationReport validate_file(const std::string& path);

// validate_file in a child process: libhdf5 1.10 itself crashes or loops on
// some damaged files, and this turns either into an Unreadable report
// (library_failure set) instead of taking the caller down. timeout_s <= 0:
// isolated_read_timeout().
ValidationReport validate_isolated(const std::string& path, int timeout_s = 0);

// Seconds an isolated read may take: RTRACE_VALIDATE_TIMEOUT, default 600.
int isolated_read_timeout();

// Why reading `path` in this process would crash or hang libhdf5 (one line),
// or nothing. Checked in a child process before a command reads a file it did
// not just write (`--resume`, `--ert FILE`); missing, non-HDF5 or off-schema
// files are left to the caller's own, more specific errors.
std::optional<std::string> hdf5_failure(const std::string& path, int timeout_s = 0);

// The schema JSON compiled into this build.
const char* schema_v1_json() noexcept;

}  // namespace rtrace::store
