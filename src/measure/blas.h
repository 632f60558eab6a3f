// OpenBLAS, loaded with dlopen on first use. Linking it would start its worker
// threads in every process at load time (they spin, then sleep), which costs
// the sweep and the server CPU they never use; only the benchmarks load it.
#pragma once

#include <cblas.h>

namespace roofline::measure::blas {

struct Api {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_sgemv) sgemv = nullptr;
  void (*set_num_threads)(int) = nullptr;
  int (*get_num_threads)() = nullptr;
};

// Throws Unsupported("OpenBLAS not available: ...") when it cannot be loaded.
const Api& api();

}  // namespace roofline::measure::blas
