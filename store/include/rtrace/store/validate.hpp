// Checks a file against the machine-readable schema (schemas/rtrace-v1.json,
// compiled in) and lists every deviation.
#pragma once

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
};

ValidationReport validate_file(const std::string& path);

// The schema JSON compiled into this build.
const char* schema_v1_json() noexcept;

}  // namespace rtrace::store
