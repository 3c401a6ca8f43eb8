// A flat byte encoding of string lists, for sending names and logs over MPI.
#pragma once

#include <string>
#include <vector>

namespace rtrace::tracer {

// Appends `list` to `out`: u64 count, then per string u64 length + bytes.
void pack_strings(const std::vector<std::string>& list, std::string& out);
// Reads one list at `pos` and advances it. Throws std::runtime_error on a truncated buffer.
std::vector<std::string> unpack_strings(const std::string& in, std::size_t& pos);

}  // namespace rtrace::tracer
