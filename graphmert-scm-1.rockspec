-- luarocks --lua-version 5.4 make    (from a clone; builds with the Makefile, installs the module
-- graphmert (graphmert.core + the Lua files and the files they read, lua/graphmert/kg/assets/) and the
-- graphmert interpreter into the rocks tree)
rockspec_format = "3.0"
package = "graphmert"
version = "scm-1"
source = {
  url = "git+file://.", -- `luarocks make` builds the working tree it is run in
}
description = {
  summary = "Graph-aware transformer attention on a float32 C core with autograd",
  detailed = [[
A C runtime (float32 tensors, define-by-run autograd, OpenBLAS) scripted in Lua 5.4, for
GraphMERT's graph-aware attention and the attention families it is compared with.]],
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
external_dependencies = {
  OPENBLAS = { library = "openblas" },
}
build = {
  type = "make",
  -- the Makefile's own CFLAGS (portable -march, -O3) stay; only where Lua lives comes from luarocks
  build_variables = {
    LUA_CFLAGS = "-I$(LUA_INCDIR)",
    BUILT_DATADIR = "$(PREFIX)/share/graphmert", -- luarocks copies the binary out of the rock's folder
  },
  install_variables = {
    PREFIX = "$(PREFIX)",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
    DATADIR = "$(PREFIX)/share/graphmert",
    -- as the build had them, so that install's `all` finds the binary up to date
    LUA_CFLAGS = "-I$(LUA_INCDIR)",
    BUILT_DATADIR = "$(PREFIX)/share/graphmert",
  },
}
