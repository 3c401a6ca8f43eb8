#include "libpfm.hpp"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#ifdef RTRACE_TRACER_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

namespace rtrace::tracer {

#ifdef RTRACE_TRACER_HAVE_LIBPFM
namespace {

struct Api {
  int (*initialize)() = nullptr;
  const char* (*strerror)(int) = nullptr;
  int (*get_os_event_encoding)(const char*, int, pfm_os_t, void*) = nullptr;
  int (*get_pmu_info)(pfm_pmu_t, pfm_pmu_info_t*) = nullptr;
};
Api g_api;

}  // namespace

Libpfm* Libpfm::get(std::string* why) noexcept {
  static Libpfm* instance = nullptr;
  static std::string failure;
  static std::once_flag once;
  try {
    std::call_once(once, [] {
      void* h = dlopen("libpfm.so.4", RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        failure = std::string("libpfm4 not found (") + dlerror() + "; Debian package libpfm4)";
        return;
      }
      g_api.initialize = reinterpret_cast<int (*)()>(dlsym(h, "pfm_initialize"));
      g_api.strerror = reinterpret_cast<const char* (*)(int)>(dlsym(h, "pfm_strerror"));
      g_api.get_os_event_encoding =
          reinterpret_cast<int (*)(const char*, int, pfm_os_t, void*)>(dlsym(h, "pfm_get_os_event_encoding"));
      g_api.get_pmu_info = reinterpret_cast<int (*)(pfm_pmu_t, pfm_pmu_info_t*)>(dlsym(h, "pfm_get_pmu_info"));
      if (!g_api.initialize || !g_api.strerror || !g_api.get_os_event_encoding || !g_api.get_pmu_info) {
        failure = "libpfm4 lacks pfm_initialize, pfm_get_os_event_encoding or pfm_get_pmu_info";
        return;
      }
      const int rc = g_api.initialize();
      if (rc != PFM_SUCCESS) {
        failure = std::string("pfm_initialize: ") + g_api.strerror(rc);
        return;
      }
      instance = new Libpfm();  // process lifetime (and the library stays loaded): used until exit
    });
  } catch (...) {
    failure = "libpfm4 initialisation failed";
  }
  if (!instance && why) *why = failure;
  return instance;
}

std::string Libpfm::core_pmu() const {
  for (int p = PFM_PMU_NONE; p < PFM_PMU_MAX; ++p) {
    pfm_pmu_info_t info;
    std::memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (g_api.get_pmu_info(static_cast<pfm_pmu_t>(p), &info) != PFM_SUCCESS) continue;
    if (info.is_present && info.type == PFM_PMU_TYPE_CORE && info.name) return info.name;
  }
  return "";
}

bool Libpfm::encode(const std::string& name, PerfEncoding& out) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.size = sizeof arg;
  const int rc = g_api.get_os_event_encoding(name.c_str(), PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
  if (rc != PFM_SUCCESS) {
    last_error_ = name + ": " + g_api.strerror(rc);
    return false;
  }
  out.type = attr.type;
  out.config = attr.config;
  out.config1 = attr.config1;
  out.config2 = attr.config2;
  return true;
}

#else  // built without libpfm4's headers

Libpfm* Libpfm::get(std::string* why) noexcept {
  if (why) *why = "rtrace was built without libpfm4 (Debian libpfm4-dev)";
  return nullptr;
}
std::string Libpfm::core_pmu() const { return ""; }
bool Libpfm::encode(const std::string&, PerfEncoding&) { return false; }

#endif

}  // namespace rtrace::tracer
