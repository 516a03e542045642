-- `make setup all` on a machine without the packages: the build must use the flags pkg-config
-- gives once setup has installed them, not the empty ones of a Makefile read before. A stand-in
-- pkg-config answers only after a stand-in setup script has run; `make -n -B` prints the compile
-- commands it would run.
local files = require "spec.files"

describe("make setup all", function()
  it("compiles with the flags pkg-config gives after setup installed the packages", function()
    local dir = files.tmpname()
    os.execute("mkdir -p " .. dir)
    local mark = dir .. "/installed"
    files.write(dir .. "/pkg-config", table.concat({
      "#!/bin/sh",
      '[ -e "$FAKE_MARK" ] || exit 1',
      'case "$1" in',
      '  --cflags) echo "-I/stand-in/after-setup" ;;',
      '  --variable=*) echo "/stand-in/lib" ;;',
      "  --exists) exit 0 ;;",
      "esac",
    }, "\n") .. "\n")
    os.execute("chmod +x " .. dir .. "/pkg-config")
    files.write(dir .. "/setup.sh", 'touch "$FAKE_MARK"\n')
    local out = files.run(string.format("FAKE_MARK=%s PATH=%s:$PATH make -n -B setup all SETUP_SCRIPT=%s/setup.sh", mark, dir, dir))
    local compiles, with_flags = 0, 0
    for line in out:gmatch("[^\n]+") do
      if line:match("%-c src/gm_tensor%.c") or line:match("%-o build/bin/graphmert") then
        compiles = compiles + 1
        if line:find("-I/stand-in/after-setup", 1, true) then with_flags = with_flags + 1 end
      end
    end
    assert.is_true(compiles >= 2, out)
    assert.equal(compiles, with_flags, out)
    os.execute("rm -rf " .. dir)
  end)
end)
