#include "rtrace/store/hdf5.hpp"

#include <algorithm>

#include <mutex>

namespace rtrace::store {

namespace {
std::string compose(const std::string& op, const std::string& file, const std::string& object,
                    const std::string& detail) {
  std::string where = file;
  if (!object.empty()) where += (where.empty() ? "" : ":") + object;
  std::string msg = op;
  if (!where.empty()) msg += " " + where;
  if (!detail.empty()) msg += ": " + detail;
  // Errors are reported as one line.
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  return msg;
}

herr_t innermost(unsigned n, const H5E_error2_t* err, void* data) {
  // The walk goes inner-to-outer with H5E_WALK_UPWARD; keep the first description.
  auto* out = static_cast<std::string*>(data);
  if (n == 0 && err && err->desc) *out = err->desc;
  return 0;
}
}  // namespace

Error::Error(std::string operation, std::string file, std::string object, std::string detail)
    : std::runtime_error(compose(operation, file, object, detail)),
      operation_(std::move(operation)),
      file_(std::move(file)),
      object_(std::move(object)),
      detail_(std::move(detail)) {}

void silence_hdf5_errors() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    // HDF5 1.10 crashes in its atexit cleanup on a file whose close failed
    // (e.g. ENOSPC). rtrace closes every file through RAII, so that cleanup
    // has nothing to do: skip it.
    H5dont_atexit();
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

Id& Id::operator=(Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    other.id_ = H5I_INVALID_HID;
  }
  return *this;
}

Id transfer_list(std::size_t bytes) {
  Id dxpl(H5Pcreate(H5P_DATASET_XFER));
  if (dxpl.valid()) H5Pset_buffer(dxpl.get(), std::clamp<std::size_t>(bytes, 4096, 1 << 20), nullptr, nullptr);
  return dxpl;
}

void Id::reset() noexcept {
  if (id_ < 0) return;
  // Errors on close are swallowed: destructors never throw. File::close()
  // reports them for callers that care.
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: H5Idec_ref(id_); break;
  }
  id_ = H5I_INVALID_HID;
}

hid_t Id::release() noexcept {
  hid_t id = id_;
  id_ = H5I_INVALID_HID;
  return id;
}

std::string hdf5_error_message() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &msg);
  // I/O failures carry a long dump ("time = ..., errno = 28, error message =
  // 'No space left on device', buf = ..."): keep the operating system's words.
  const std::string key = "error message = '";
  auto at = msg.find(key);
  if (at != std::string::npos) {
    auto end = msg.find('\'', at + key.size());
    if (end != std::string::npos) msg = msg.substr(at + key.size(), end - at - key.size());
  }
  return msg;
}

hid_t check(hid_t value, const char* operation, const std::string& file, const std::string& object) {
  if (value < 0) {
    std::string detail = hdf5_error_message();
    H5Eclear2(H5E_DEFAULT);
    throw Error(operation, file, object, detail.empty() ? "HDF5 call failed" : detail);
  }
  return value;
}

herr_t check_status(herr_t value, const char* operation, const std::string& file, const std::string& object) {
  return static_cast<herr_t>(check(static_cast<hid_t>(value), operation, file, object));
}

}  // namespace rtrace::store
