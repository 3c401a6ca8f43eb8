#include "serialize.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace rtrace::tracer {

namespace {
void put_u64(std::uint64_t v, std::string& out) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
std::uint64_t get_u64(const std::string& in, std::size_t& pos) {
  if (in.size() - pos < sizeof(std::uint64_t) || pos > in.size())
    throw std::runtime_error("string list: truncated at byte " + std::to_string(pos));
  std::uint64_t v;
  std::memcpy(&v, in.data() + pos, sizeof v);
  pos += sizeof v;
  return v;
}
}  // namespace

void pack_strings(const std::vector<std::string>& list, std::string& out) {
  put_u64(list.size(), out);
  for (const auto& s : list) {
    put_u64(s.size(), out);
    out.append(s);
  }
}

std::vector<std::string> unpack_strings(const std::string& in, std::size_t& pos) {
  std::uint64_t n = get_u64(in, pos);
  std::vector<std::string> out;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t len = get_u64(in, pos);
    if (len > in.size() - pos) throw std::runtime_error("string list: string " + std::to_string(i) + " truncated");
    out.emplace_back(in.data() + pos, len);
    pos += len;
  }
  return out;
}

}  // namespace rtrace::tracer
