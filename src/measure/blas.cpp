#include "blas.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "roofline/error.h"

namespace roofline::measure::blas {

const Api& api() {
  static std::once_flag once;
  static Api a;
  static std::string error;
  std::call_once(once, [] {
    void* h = nullptr;
    for (const char* lib : {"libopenblas.so.0", "libopenblas.so"}) {
      h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (h) break;
    }
    if (!h) {
      error =
          "OpenBLAS not available: libopenblas.so.0 could not be loaded (install libopenblas-dev)";
      return;
    }
    a.sgemm = reinterpret_cast<decltype(a.sgemm)>(dlsym(h, "cblas_sgemm"));
    a.sgemv = reinterpret_cast<decltype(a.sgemv)>(dlsym(h, "cblas_sgemv"));
    a.set_num_threads =
        reinterpret_cast<decltype(a.set_num_threads)>(dlsym(h, "openblas_set_num_threads"));
    a.get_num_threads =
        reinterpret_cast<decltype(a.get_num_threads)>(dlsym(h, "openblas_get_num_threads"));
    if (!a.sgemm || !a.sgemv || !a.set_num_threads || !a.get_num_threads) {
      error = "OpenBLAS not available: the loaded library lacks cblas_sgemm/cblas_sgemv";
      a = Api{};
    }
  });
  if (!a.sgemm) throw Unsupported(error);
  return a;
}

}  // namespace roofline::measure::blas
