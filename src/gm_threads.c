/* gm_threads.c — one knob for the core's OpenMP team, which also runs the matrix products
 * (OpenBLAS itself stays single-threaded: see gm_gemm). */
#include <omp.h>

#include "gm_internal.h"

void gm_set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
}

int gm_get_num_threads(void) { return omp_get_max_threads(); }
