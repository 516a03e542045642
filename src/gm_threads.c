/* gm_threads.c — one knob for OpenBLAS's threads and the core's OpenMP loops. */
#include <omp.h>

#include "gm_internal.h"

void gm_set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
  gm_blas_threads_set(n);
}

int gm_get_num_threads(void) { return omp_get_max_threads(); }
