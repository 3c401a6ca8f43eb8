// A flat byte encoding of string lists, for sending names and logs over MPI.
#pragma once

#include "rtrace/store/run_file.hpp"

#include <string>
#include <vector>

namespace rtrace::tracer {

// Appends `list` to `out`: u64 count, then per string u64 length + bytes.
void pack_strings(const std::vector<std::string>& list, std::string& out);
// Reads one list at `pos` and advances it. Throws std::runtime_error on a truncated buffer.
std::vector<std::string> unpack_strings(const std::string& in, std::size_t& pos);

// A whole rank's records (rows as raw bytes: sender and receiver run the same
// tracer build). Used by the gather-to-rank-0 collective write.
std::string pack_records(const store::RankRecords& rec);
store::RankRecords unpack_records(const std::string& in);

}  // namespace rtrace::tracer
