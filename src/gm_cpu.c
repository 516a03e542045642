/* gm_cpu.c — the vector features of the CPU we run on, read at run time (never from the build
 * machine: the binary must keep working when the session's CPU model changes). GCC's
 * __builtin_cpu_supports reads CPUID and also checks that the OS saves the wide registers. */
#include <cpuid.h>

#include "gm_internal.h"

static const char *const feature_names[GM_CPU_FEATURE_COUNT] = {
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd",
    "avx512_bf16", "amx_bf16"};

/* CPUID leaf 7 EDX: bit 22 AMX-BF16, bit 24 AMX-TILE (clang's __builtin_cpu_supports does not
 * know them). Whether the OS lets a process use the tiles is asked where they are used
 * (gm_bf16.c), since Linux grants them per process on request. */
static int amx_bf16(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return (d >> 22 & 1) && (d >> 24 & 1);
}

static unsigned detect(void) {
  __builtin_cpu_init();
  unsigned f = 0;
  f |= __builtin_cpu_supports("sse4.2") ? GM_CPU_SSE4_2 : 0;
  f |= __builtin_cpu_supports("avx") ? GM_CPU_AVX : 0;
  f |= __builtin_cpu_supports("avx2") ? GM_CPU_AVX2 : 0;
  f |= __builtin_cpu_supports("fma") ? GM_CPU_FMA : 0;
  f |= __builtin_cpu_supports("avx512f") ? GM_CPU_AVX512F : 0;
  f |= __builtin_cpu_supports("avx512bw") ? GM_CPU_AVX512BW : 0;
  f |= __builtin_cpu_supports("avx512vl") ? GM_CPU_AVX512VL : 0;
  f |= __builtin_cpu_supports("avx512dq") ? GM_CPU_AVX512DQ : 0;
  f |= __builtin_cpu_supports("avx512cd") ? GM_CPU_AVX512CD : 0;
  f |= __builtin_cpu_supports("avx512bf16") ? GM_CPU_AVX512_BF16 : 0;
  f |= amx_bf16() ? GM_CPU_AMX_BF16 : 0;
  return f;
}

unsigned gm_cpu_features(void) {
  static unsigned features;
  static int known;
  if (!__atomic_load_n(&known, __ATOMIC_ACQUIRE)) { /* idempotent: a race computes it twice */
    __atomic_store_n(&features, detect(), __ATOMIC_RELAXED);
    __atomic_store_n(&known, 1, __ATOMIC_RELEASE);
  }
  return __atomic_load_n(&features, __ATOMIC_RELAXED);
}

const char *gm_cpu_feature_name(int bit) {
  return bit >= 0 && bit < GM_CPU_FEATURE_COUNT ? feature_names[bit] : NULL;
}
