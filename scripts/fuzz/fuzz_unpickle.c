/* fuzz_unpickle.c — libFuzzer harness for the restricted unpickler: each input is a data.pkl,
 * put into an in-memory archive beside two float32 storages (keys "0" and "1") and loaded, so the
 * tensor descriptions it builds (offsets, sizes, strides) are checked against real storages too.
 *   ./build/fuzz/fuzz_unpickle -max_total_time=60 scripts/fuzz/corpus/unpickle */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gm_checkpoint_reader.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gm_memory_set_limit(64u << 20);
  return 0;
}

static unsigned char *put16(unsigned char *p, unsigned v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  return p + 2;
}

static unsigned char *put32(unsigned char *p, uint32_t v) {
  return put16(put16(p, v & 0xffff), v >> 16);
}

typedef struct entry {
  const char *name;
  const unsigned char *data;
  uint32_t size, offset;
} entry;

/* A stored zip of the entries (CRCs left 0: the reader does not check them). */
static size_t write_zip(unsigned char *out, entry *e, int n) {
  unsigned char *p = out;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(e[i].name);
    e[i].offset = (uint32_t)(p - out);
    p = put32(p, 0x04034b50);
    p = put16(put16(put16(put16(put16(p, 20), 0), 0), 0), 0);
    p = put32(put32(put32(p, 0), e[i].size), e[i].size);
    p = put16(put16(p, (unsigned)len), 0);
    memcpy(p, e[i].name, len);
    memcpy(p + len, e[i].data, e[i].size);
    p += len + e[i].size;
  }
  unsigned char *cd = p;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(e[i].name);
    p = put32(p, 0x02014b50);
    p = put16(put16(put16(put16(put16(put16(p, 20), 20), 0), 0), 0), 0);
    p = put32(put32(put32(p, 0), e[i].size), e[i].size);
    p = put16(put16(put16(put16(put16(p, (unsigned)len), 0), 0), 0), 0);
    p = put32(put32(p, 0), e[i].offset);
    memcpy(p, e[i].name, len);
    p += len;
  }
  uint32_t cd_size = (uint32_t)(p - cd);
  p = put32(p, 0x06054b50);
  p = put16(put16(put16(put16(p, 0), 0), (unsigned)n), (unsigned)n);
  p = put32(put32(p, cd_size), (uint32_t)(cd - out));
  p = put16(p, 0);
  return (size_t)(p - out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static unsigned char floats[256];
  for (int i = 0; i < 256; i++) floats[i] = (unsigned char)i;
  entry e[] = {{"archive/data.pkl", data, (uint32_t)size, 0},
               {"archive/data/0", floats, 256, 0},
               {"archive/data/1", floats, 16, 0}};
  unsigned char *zip = malloc(size + 1024);
  if (!zip) return 0;
  size_t n = write_zip(zip, e, 3);
  gm_source src = {.name = "fuzz.pt", .fd = -1, .mem = zip, .size = n};
  gm_state_dict_free(gm_torch_load_source(&src, 0));
  free(zip);
  return 0;
}
