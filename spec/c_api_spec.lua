-- The C core on its own: the tour in src/gm.h's opening comment, compiled as docs/internals.md
-- says and run, gives the gradient it promises (so the tutorial cannot drift from the API).
local files = require "spec.files"

describe("the C API (src/gm.h)", function()
  it("runs the header's tour, built against the core's objects as the docs say", function()
    local header = files.read("src/gm.h")
    local tour = assert(header:match("A short tour\n %* %-+\n(.-)\n %*\n"), "no tour in src/gm.h")
    tour = tour:gsub("\n %*    ", "\n"):gsub("^ %*    ", "")
    local dir = files.tmpname()
    os.execute("mkdir -p " .. dir)
    -- the tour, with a check of w's gradient before it is released
    local body = tour:gsub("gm_tensor_release%(l%); gm_tensor_release%(y%); gm_tensor_release%(w%);", [[
for (int64_t i = 0; i < w->numel; i++) {
  float t = tanhf(w->data[i]);
  if (!w->grad || fabsf(w->grad->data[i] - (1 - t * t)) > 1e-6f) { puts("wrong gradient"); return 1; }
}
puts("tour ok");
%0]])
    files.write(dir .. "/tour.c", "#include <math.h>\n#include <stdio.h>\n#include \"gm.h\"\nint main(void) {\n" .. body ..
      "\nreturn 0;\n}\n")
    -- (under make asan the objects are instrumented: the program is linked as they were built)
    local sanitize = files.asan and "-fsanitize=address,undefined " or ""
    local out, code = files.run(string.format("cc -std=c11 %s-Isrc -o %s/tour %s/tour.c build/obj/gm_*.o -fopenmp -lm -ldl " ..
      "$(pkg-config --libs ompi-c) && ASAN_OPTIONS=detect_leaks=0 %s/tour", sanitize, dir, dir, dir))
    os.execute("rm -rf " .. dir)
    assert.equal(0, code, out)
    assert.matches("tour ok", out)
  end)
end)
