-- The graphmert binary: scripts with arg, -e, -v, -i, the REPL, C modules, stdin.
local bin = "./build/bin/graphmert"
local files = require "spec.files"
local run, lua = files.run, files.lua

describe("graphmert binary", function()
  it("runs a script with arg set as lua5.4 does", function()
    local path = os.tmpname()
    local f = io.open(path, "w")
    f:write('print(arg[0] == ..., arg[1], select("#", ...), arg[-1] ~= nil)')
    f:close()
    local out, code = run(bin .. " " .. path .. " a b")
    os.remove(path)
    assert.equal(0, code)
    assert.equal("false\ta\t2\ttrue\n", out)
  end)

  it("executes -e and prints the version with -v", function()
    local out = run(bin .. " -v -e \"print(require('graphmert').ones(2):sum():item())\"")
    assert.matches("^graphmert %d+%.%d+%.%d+ %-%- Lua 5%.4", out)
    assert.matches("\n2%.0\n$", out)
  end)

  it("has every module built in and still loads C modules such as lpeg", function()
    local out, code = run("cd /tmp && " .. os.getenv("PWD") .. "/" .. bin
      .. " -e \"assert(require('graphmert.nn').Linear); print(type(require('lpeg').match))\"")
    assert.equal(0, code)
    assert.equal("function\n", out)
  end)

  it("exits with a traceback and status 1 on an error", function()
    local out, code = run(bin .. " -e \"error('boom')\"")
    assert.equal(1, code)
    assert.matches("boom", out)
    assert.matches("stack traceback", out)
  end)

  it("runs a REPL that prints bare expressions and =expr and survives errors", function()
    local out, code = run("printf 'x = 20\\nx + 1\\n=gm.ones(2)\\nerror(\"e\")\\nx;\\nprint(\"after\")\\n' | HOME=/tmp "
      .. bin .. " -i")
    assert.equal(0, code)
    assert.matches("\n21\n", out)
    assert.matches("%[graphmert.Tensor of size 2%]", out)
    assert.matches("after", out)
    assert.is_nil(out:match("\n20\n"))
  end)

  it("takes a bare help as help(), and quit or exit alone as Ctrl-D unless a global has that name", function()
    local out, code = run("printf 'help\\nquit\\nprint(\"not reached\")\\n' | HOME=/tmp " .. bin .. " -i")
    assert.equal(0, code)
    assert.matches("help%(name%) or %?name prints", out)
    assert.is_nil(out:find("not reached", 1, true))
    out = run("printf 'exit()\\nprint(\"not reached\")\\n' | HOME=/tmp " .. bin .. " -i")
    assert.is_nil(out:find("not reached", 1, true))
    out = run("printf 'quit = 5\\nquit\\nquitter = 1\\nprint(\"reached\")\\n' | HOME=/tmp " .. bin .. " -i")
    assert.matches("\n5\n", out)
    assert.matches("reached", out)
  end)

  it("reads a script from stdin", function()
    local out = run("echo 'print(6 * 7)' | " .. bin .. " -")
    assert.equal("42\n", out)
  end)

  it("rejects unknown options", function()
    local out, code = run(bin .. " --bogus")
    assert.equal(1, code)
    assert.matches("unrecognized option '%-%-bogus'", out)
  end)

  it("requires graphmert from a stock lua5.4 with the README's paths", function()
    local out, code = run(files.lua_here .. " -e \"local gm = require 'graphmert'; print(gm.ones(3):sum():item(), rawget(_G, 'gm'))\"")
    assert.equal(0, code)
    assert.equal("3.0\tnil\n", out)
  end)
end)

describe("make install", function()
  it("installs a module that a stock lua5.4 finds, and the binary", function()
    local prefix = os.tmpname()
    os.remove(prefix)
    local out, code = run("make -s install PREFIX=" .. prefix)
    assert.equal(0, code, out)
    local paths = string.format("LUA_PATH='%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua;;' "
      .. "LUA_CPATH='%s/lib/lua/5.4/?.so;;'", prefix, prefix, prefix)
    out, code = run("cd / && " .. paths .. " " .. lua .. " -e \"print(require('graphmert').nn.Linear(2, 3)(require('graphmert').ones(1, 2)):numel())\"")
    assert.equal(0, code, out)
    assert.equal("3\n", out)
    out = run(prefix .. "/bin/graphmert -v")
    assert.matches("^graphmert", out)
    run("rm -rf " .. prefix)
  end)

  it("installs the commands: train and extract run from any folder, with a shipped config by name", function()
    local prefix, work = files.tmpname(), files.tmpname()
    local out, code = run("make -s install PREFIX=" .. prefix .. " && mkdir -p " .. work)
    assert.equal(0, code, out)
    local gm_bin = "cd " .. work .. " && " .. prefix .. "/bin/graphmert "
    out, code = run(gm_bin .. "configs")
    assert.equal(0, code, out)
    assert.matches("\ntiny +The tiny example dataset", out)
    out, code = run(gm_bin .. "train --config tiny --steps 2 --out run > train.log; cat train.log")
    assert.equal(0, code, out)
    assert.is_nil(out:find("\r", 1, true), "a progress line rewrote itself in a log")
    assert.matches("GraphMERT: step 2/2", out)
    -- without --out a run is named after its data folder (else its config)
    out, code = run("cp -r " .. prefix .. "/share/graphmert/experiments/data/tiny " .. work .. "/kidney && " .. gm_bin ..
      "train --data kidney/ --config tiny --steps 1")
    assert.equal(0, code, out)
    assert.matches("done: out/kidney/checkpoint.safetensors", out)
    out, code = run(gm_bin .. "extract --checkpoint run --input " .. prefix .. "/share/graphmert/experiments/data/tiny/corpus.txt --out kg.jsonl")
    assert.equal(0, code, out)
    assert.matches("reading .*corpus.txt as plain text", out)
    assert.is_not_nil(io.open(work .. "/kg.jsonl"))
    -- extract and export make the missing folders of their --out, as train does
    out, code = run(gm_bin .. "extract --checkpoint run --input " .. prefix .. "/share/graphmert/experiments/data/tiny/corpus.txt " ..
      "--out new/deeper/kg.sqlite --no-page && " .. prefix .. "/bin/graphmert export --store new/deeper/kg.sqlite --out more/kg.nt")
    assert.equal(0, code, out)
    assert.is_not_nil(io.open(work .. "/more/kg.nt"))
    out, code = run(gm_bin .. "extract --help")
    assert.equal(0, code, out)
    assert.matches("^usage: graphmert extract %[options%]\n", out)
    for _, help in ipairs { "--help", "-h", "help" } do
      out, code = run(gm_bin .. help)
      assert.equal(0, code, out)
      assert.matches("^usage: graphmert COMMAND %[options%]", out)
    end
    for _, help in ipairs { "help extract", "extract -h" } do
      out, code = run(gm_bin .. help)
      assert.equal(0, code, out)
      assert.matches("^usage: graphmert extract %[options%]\n", out)
    end
    out = run(gm_bin .. "--version")
    assert.matches("^graphmert %d", out)
    -- copied away from its files (a binary built without BUILT_DATADIR): every command says where to point
    for _, command in ipairs { "configs", "validate --config tiny" } do
      out, code = run("mkdir -p " .. work .. "/lone && cp " .. prefix .. "/bin/graphmert " .. work .. "/lone/ && cd / && env -u GRAPHMERT_HOME "
        .. work .. "/lone/graphmert " .. command)
      assert.equal(2, code, out)
      assert.matches("cannot find the shipped experiments/ %(set GRAPHMERT_HOME", out)
    end
    -- a folder or file named like a command does not hide it; ./name runs the file
    out, code = run("cd " .. work .. " && mkdir -p train && printf 'print(\"the file\")' > score && " .. prefix ..
      "/bin/graphmert train --help && " .. prefix .. "/bin/graphmert score --help && " .. prefix .. "/bin/graphmert ./score")
    assert.equal(0, code, out)
    assert.matches("^usage: graphmert train %[options%].*\nusage: graphmert score %[options%].*\nthe file\n$", out)
    -- usage errors: one line, status 2
    for _, c in ipairs {
      { "tarin", "unknown command 'tarin' %(did you mean 'train'%?%)" },
      { "extract --checkpoint=run --top 0", "^graphmert extract: %-%-top must be at least 1, got 0 %(see %-%-help%)\n$" },
      { "extract --checkpoint run --top 3 --top 4", "^graphmert extract: %-%-top is given twice %(see %-%-help%)" },
      { "extract --chekpoint run", "^graphmert extract: unknown argument %-%-chekpoint %(did you mean %-%-checkpoint%?%)" },
      { "train --config tiny --steps x", "^graphmert train: %-%-steps must be an integer, got x" },
      { "train --config astro", "^graphmert train: %-%-config: no file astro, and no shipped config of that name %(graphmert configs lists them%)" },
      { "validate --config run", "^graphmert validate: %-%-config: run is a folder: it names a config file or a shipped config" },
      { "export --store new/deeper/kg.sqlite --out train.log/x.nt", "^graphmert export: cannot write train%.log/x%.nt: train%.log is a file, not a folder" },
      { "extract --checkpoint run --input train.log --out train.log/in/kg.jsonl", "\ngraphmert extract: cannot write train%.log/in/kg%.jsonl: train%.log is a file, not a folder\n$" },
      { "validate --data run --config tiny", "^graphmert validate: give %-%-data DIR or %-%-config FILE, not both" },
      { "extract --checkpoint run --input train.log --ouput k.jsonl", "did you mean %-%-out%?" },
      { "extract --checkpoint run/run.json --input train.log", "run/run%.json is a file, not a training run's folder" },
    } do
      out, code = run(gm_bin .. c[1])
      assert.equal(2, code, c[1] .. ": " .. out)
      assert.matches(c[2], out)
      assert.is_nil(out:find("traceback"), out)
    end
    run("rm -rf " .. prefix .. " " .. work)
  end)
end)
