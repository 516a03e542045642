/* gm_threads.c — one knob for OpenBLAS's threads and the core's OpenMP loops. */
#include <cblas.h>
#include <omp.h>

#include "gm_internal.h"

void gm_set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int gm_get_num_threads(void) { return omp_get_max_threads(); }
