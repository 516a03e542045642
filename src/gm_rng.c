/* gm_rng.c — xoshiro256** (Blackman & Vigna), seeded by splitmix64: reproducible bits. */
#include <math.h>

#include "gm_internal.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void gm_rng_seed(gm_rng *rng, uint64_t seed) {
  for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gm_rng_next(gm_rng *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double gm_rng_uniform(gm_rng *rng) { return (double)(gm_rng_next(rng) >> 11) * 0x1.0p-53; }

double gm_rng_normal(gm_rng *rng) {
  /* 1 - u lies in (0, 1], so the log is finite */
  double u1 = 1.0 - gm_rng_uniform(rng), u2 = gm_rng_uniform(rng);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
