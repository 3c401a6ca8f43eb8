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

namespace {
template <class Row>
void pack_rows(const std::vector<Row>& rows, std::string& out) {
  put_u64(rows.size(), out);
  out.append(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(Row));
}
template <class Row>
std::vector<Row> unpack_rows(const std::string& in, std::size_t& pos) {
  std::uint64_t n = get_u64(in, pos);
  if (n > (in.size() - pos) / sizeof(Row)) throw std::runtime_error("records: table truncated");
  std::vector<Row> rows(n);
  if (n) std::memcpy(rows.data(), in.data() + pos, n * sizeof(Row));
  pos += n * sizeof(Row);
  return rows;
}
}  // namespace

std::string pack_records(const store::RankRecords& rec) {
  std::string out;
  pack_rows(std::vector<store::RankInfoRow>{rec.info}, out);
  pack_strings(rec.names, out);
  pack_rows(rec.regions, out);
  pack_rows(rec.kernels, out);
  pack_rows(rec.memcpy, out);
  pack_rows(rec.mpi, out);
  pack_strings(rec.log, out);
  pack_rows(rec.sampling, out);
  pack_rows(rec.callpaths, out);
  pack_rows(rec.dispatch, out);
  return out;
}

store::RankRecords unpack_records(const std::string& in) {
  store::RankRecords rec;
  std::size_t pos = 0;
  auto info = unpack_rows<store::RankInfoRow>(in, pos);
  if (info.size() != 1) throw std::runtime_error("records: expected one info row");
  rec.info = info[0];
  rec.names = unpack_strings(in, pos);
  rec.regions = unpack_rows<store::RegionRow>(in, pos);
  rec.kernels = unpack_rows<store::KernelRow>(in, pos);
  rec.memcpy = unpack_rows<store::MemcpyRow>(in, pos);
  rec.mpi = unpack_rows<store::MpiRow>(in, pos);
  rec.log = unpack_strings(in, pos);
  rec.sampling = unpack_rows<store::SamplingRow>(in, pos);
  rec.callpaths = unpack_rows<store::CallPathRow>(in, pos);
  rec.dispatch = unpack_rows<store::DispatchRow>(in, pos);
  return rec;
}

}  // namespace rtrace::tracer
