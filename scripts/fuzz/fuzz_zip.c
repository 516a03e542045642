/* fuzz_zip.c — libFuzzer harness for the PyTorch checkpoint reader from the zip side: each input
 * is a whole archive, read from memory through the zip reader, the unpickler and the tensor
 * builder (src/gm_zip.c, gm_unpickle.c, gm_torch.c; no Lua). An error is an expected outcome; a
 * crash or a sanitizer report is a bug.
 *   ./build/fuzz/fuzz_zip -max_total_time=60 scripts/fuzz/corpus/zip */
#include <stdint.h>
#include <stdio.h>

#include "gm_checkpoint_reader.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gm_memory_set_limit(64u << 20); /* huge sizes must become errors, not out-of-memory kills */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gm_source src = {.name = "fuzz.pt", .fd = -1, .mem = data, .size = size};
  gm_zip *zip = gm_zip_open(&src);
  if (zip) { /* the reader's own promises: entries sorted, inside the input */
    for (int i = 0; i < zip->count; i++)
      if (zip->entries[i].data_offset + zip->entries[i].size > size ||
          gm_zip_find(zip, zip->entries[i].name) != &zip->entries[i])
        __builtin_trap();
    gm_zip_free(zip);
  }
  gm_state_dict_free(gm_torch_load_source(&src, 1));
  return 0;
}
