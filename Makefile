# graphmert — build the Lua module (build/graphmert/core.so) and the standalone interpreter
# (build/bin/graphmert), run the specs under both, install.
LUA_VERSION ?= 5.4
LUA_PC      ?= lua$(LUA_VERSION)
PREFIX      ?= /usr/local
DESTDIR     ?=
LUA_CFLAGS  ?= $(shell pkg-config --cflags $(LUA_PC))
LUA_STATIC  ?= $(shell pkg-config --variable=libdir $(LUA_PC))/liblua$(LUA_VERSION).a
LUA_LIBS    ?= $(shell pkg-config --libs $(LUA_PC))
BLAS_CFLAGS ?= $(shell pkg-config --cflags openblas)
BLAS_LIBS   ?= $(shell pkg-config --libs openblas)
LUA         ?= lua$(LUA_VERSION)
BUSTED      ?= $(LUA) /usr/bin/busted
LUADIR      ?= $(PREFIX)/share/lua/$(LUA_VERSION)
LIBDIR      ?= $(PREFIX)/lib/lua/$(LUA_VERSION)
BINDIR      ?= $(PREFIX)/bin
# the commands' scripts, configs and example data (graphmert train, graphmert configs, ...): the
# binary looks in ../share/graphmert beside itself
DATADIR     ?= $(PREFIX)/share/graphmert
# A portable binary by default: x86-64-v2 (SSE4.2, any x86-64 CPU since about 2009), with the hot
# loops also built for AVX2 and AVX-512 and chosen at load time (GM_HOT in src/gm_internal.h).
# `make NATIVE=1` builds for this machine's CPU only (-march=native), e.g. for a local benchmark;
# such a binary may not run on another CPU.
NATIVE      ?= 0
MARCH       ?= $(if $(filter 1,$(NATIVE)),native,x86-64-v2)
CFLAGS      ?= -O3 -g -march=$(MARCH)
# `make test SETUP=0` skips the setup script (apt) when the packages are known to be there.
SETUP       ?= 1
# `make valgrind SPECS=spec/tensor_spec.lua` limits the valgrind run (default: every spec).
SPECS       ?=
WARN        := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# -fno-trapping-math: no code here relies on FP traps, and without it GCC will not if-convert
# (so not vectorise) loops with float comparisons. -fno-math-errno: nor on errno from libm, and
# with it GCC keeps a sqrtf call beside each square root (for errno on a negative), so no loop
# with one vectorises. Results are unchanged.
ALL_CFLAGS  := -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -fopenmp -fno-trapping-math -fno-math-errno $(WARN) $(CFLAGS) \
               $(LUA_CFLAGS) $(BLAS_CFLAGS)
# OpenBLAS is not linked but loaded at start-up (src/gm_blas.c says why): only its header here.
LDLIBS      := -fopenmp -lm -ldl
# MPI (gm.distributed over Open MPI) is compiled in when its development files are there;
# `make MPI=0` builds without it (gm.distributed is then the one-process world).
MPI         ?= $(shell pkg-config --exists ompi-c && echo 1 || echo 0)
ifeq ($(MPI),1)
MPI_CFLAGS  ?= -DGM_WITH_MPI $(shell pkg-config --cflags ompi-c)
MPI_LIBS    ?= $(shell pkg-config --libs ompi-c)
LDLIBS      += $(MPI_LIBS)
endif

CORE_SRC := $(wildcard src/gm_*.c)
BIND_SRC := $(wildcard src/lgm_*.c)
LUA_SRC  := $(shell find lua -name '*.lua' | sort)
# the files the modules read as text (the KG page's HTML, CSS, JavaScript): built into the binary
# and installed beside the modules, as the modules are (lua/graphmert/assets.lua)
LUA_ASSETS := $(shell find lua -path '*/assets/*' -type f | sort)
CORE_OBJ := $(patsubst src/%.c,build/obj/%.o,$(CORE_SRC))
BIND_OBJ := $(patsubst src/%.c,build/obj/%.o,$(BIND_SRC))
HEADERS  := $(wildcard src/*.h)

.PHONY: FORCE all setup test test-lua test-embedded check-core bench bench-cpu bench-tiles bench-gemm bench-extract bench-page demo gene-ontology install uninstall clean asan valgrind fuzz-smoke long-run

all: build/graphmert/core.so build/bin/graphmert

build/obj build/graphmert build/bin build/gen:
	mkdir -p $@

build/obj/%.o: src/%.c $(HEADERS) | build/obj
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# only this file sees mpi.h; a stamp of the MPI setting rebuilds it when MPI= changes
build/obj/gm_distributed.o: src/gm_distributed.c $(HEADERS) build/obj/mpi-$(MPI).stamp | build/obj
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -c $< -o $@

build/obj/mpi-$(MPI).stamp: | build/obj
	rm -f build/obj/mpi-*.stamp
	touch $@

# The module is not linked against liblua: the host interpreter provides the Lua API.
# -z nodelete: lua_close must not unload it (and libgomp) under live OpenMP worker threads.
build/graphmert/core.so: $(CORE_OBJ) $(BIND_OBJ) | build/graphmert
	$(CC) -shared -Wl,-z,nodelete -o $@ $^ $(LDLIBS)

build/gen/embedded_lua.c: scripts/build/embed_lua.lua $(LUA_SRC) $(LUA_ASSETS) | build/gen
	$(LUA) scripts/build/embed_lua.lua $@ $(LUA_SRC) $(LUA_ASSETS)

# -Wl,-E exports the Lua API so that C modules such as lpeg still load in the binary.
# BUILT_DATADIR: one more folder the binary looks in for the shipped files, wherever it is copied
# (the rockspec sets it: luarocks copies the binary out of the rock's folder, where they are);
# the header is rewritten only when the value changes, so that the binary is rebuilt only then
BUILT_DATADIR ?=
build/gen/datadir.h: FORCE | build/gen
	@printf '#define GM_DATADIR "%s"\n' '$(BUILT_DATADIR)' > $@.new
	@cmp -s $@.new $@ && rm -f $@.new || mv $@.new $@

FORCE:

build/bin/graphmert: src/main.c src/main_arena.c src/main_arena.h build/gen/embedded_lua.c build/gen/datadir.h $(CORE_OBJ) $(BIND_OBJ) | build/bin
	$(CC) $(ALL_CFLAGS) -Isrc -Ibuild/gen -o $@ src/main.c src/main_arena.c build/gen/embedded_lua.c $(CORE_OBJ) $(BIND_OBJ) \
	  $(LUA_STATIC) $(LDLIBS) -lreadline -ldl -Wl,-E

build/bin/bench_sgemm: scripts/bench/bench_sgemm.c scripts/bench/bench_util.h | build/bin
	$(CC) -O2 $(BLAS_CFLAGS) -o $@ $< $(BLAS_LIBS) -lm

# No -march: the loops carry their own AVX-512 attributes and the program checks the CPU first.
build/bin/bench_fma_peak: scripts/bench/bench_fma_peak.c scripts/bench/bench_util.h | build/bin
	$(CC) -O2 -fopenmp -o $@ $<

# The attention's float32 tile products alone, in the attention's loop order, after the FMA peak
# on 1 and 2 threads (seconds; not part of make test). Linked with the core's objects: the tile
# kernel is internal.
build/bin/bench_tiles: scripts/bench/bench_tiles.c scripts/bench/bench_util.h $(CORE_OBJ) $(HEADERS) | build/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -o $@ $< $(CORE_OBJ) $(LDLIBS)

bench-tiles: build/bin/bench_tiles build/bin/bench_fma_peak
	OMP_NUM_THREADS=1 ./build/bin/bench_fma_peak f32
	OMP_NUM_THREADS=1 ./build/bin/bench_fma_peak f32-fed
	OMP_NUM_THREADS=2 ./build/bin/bench_fma_peak f32
	./build/bin/bench_tiles 2

# graphmert's float32 products (OpenBLAS) against oneDNN's sgemm over the training step's shapes,
# after the FMA peak (seconds; not part of make test). Linked with the core's objects: gm_gemm is
# internal.
build/bin/bench_gemm: scripts/bench/bench_gemm.c scripts/bench/bench_util.h $(CORE_OBJ) $(HEADERS) | build/bin
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -fopenmp -Isrc -o $@ $< $(CORE_OBJ) $(LDLIBS)

bench-gemm: build/bin/bench_gemm build/bin/bench_fma_peak
	OMP_NUM_THREADS=2 ./build/bin/bench_fma_peak f32
	./build/bin/bench_gemm 2

# The CPU's measured peak next to matmul, attention and the training step in both precisions
# and PyTorch's figures (a few minutes); not part of make test.
# extraction on the long WordNet run (train it first: experiments/configs/wordnet_long_extract.lua)
bench-extract: all
	./build/bin/graphmert scripts/bench/bench_extract.lua

bench-page: all
	./build/bin/graphmert scripts/bench/bench_page.lua

bench-cpu: all build/bin/bench_fma_peak
	./build/bin/graphmert scripts/bench/bench_cpu.lua

# The core never sees Lua: only the binding (lgm_*) and main.c include Lua headers.
check-core:
	@! grep -l 'lua\.h\|lauxlib\.h\|lualib\.h' $(CORE_SRC) src/gm.h src/gm_internal.h

# `make setup all` on a machine without the packages: this Makefile's flags come from pkg-config
# as it is read, before `setup` has installed Lua's and OpenBLAS's development files. So when
# setup is a goal, the packages are installed first, as a makefile GNU make remakes before
# anything else, and make then reads this file again (MAKE_RESTARTS) with the flags found.
SETUP_SCRIPT ?= scripts/setup.sh
ifneq ($(filter setup,$(MAKECMDGOALS)),)
ifeq ($(MAKE_RESTARTS),)
-include build/setup.mk
build/setup.mk: FORCE
	@sh $(SETUP_SCRIPT)
	@mkdir -p build && echo "# make setup ran: the Makefile is read again with the packages installed" > $@
endif
endif

setup:
	@$(if $(MAKE_RESTARTS),:,sh $(SETUP_SCRIPT))

test: $(if $(filter 1,$(SETUP)),setup)
	$(MAKE) all
	$(MAKE) check-core
	sh scripts/test/run_tests.sh

test-lua: all
	$(BUSTED) -o scripts/test/summary_output.lua

test-embedded: all
	$(BUSTED) --run=embedded -o scripts/test/summary_output.lua

demo: $(if $(filter 1,$(SETUP)),setup)
	$(MAKE) all
	./build/bin/graphmert experiments/train.lua --config experiments/configs/wordnet_10min.lua \
	  --out out/wordnet_10min --overwrite

# The Gene Ontology from Debian's r-bioc-go.db as a dataset (scripts/data/gene_ontology.sh), GraphMERT
# and its baseline trained on it, and extraction from held-out definitions scored against it.
gene-ontology: $(if $(filter 1,$(SETUP)),setup)
	$(MAKE) all
	sh scripts/data/gene_ontology.sh
	./build/bin/graphmert experiments/train.lua --config experiments/configs/gene_ontology.lua \
	  --out out/gene_ontology --overwrite
	./build/bin/graphmert experiments/extract_eval.lua --checkpoint out/gene_ontology \
	  --config experiments/configs/gene_ontology.lua --decoding constrained
	./build/bin/graphmert experiments/calibrate.lua --checkpoint out/gene_ontology \
	  --config experiments/configs/gene_ontology.lua

bench: all build/bin/bench_sgemm
	./build/bin/graphmert scripts/bench/bench_core.lua
	./build/bin/graphmert scripts/bench/bench_digress.lua

# -fno-sanitize-recover: an UndefinedBehaviorSanitizer report stops the run instead of scrolling by.
# Only the build products are removed (before and after), not the fuzzers' corpora under build/fuzz.
BUILD_PRODUCTS := build/obj build/graphmert build/bin build/gen
asan:
	rm -rf $(BUILD_PRODUCTS)
	$(MAKE) all CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
	ASAN_OPTIONS=detect_leaks=1 GRAPHMERT_ASAN_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  $(BUSTED) --run=embedded -o scripts/test/summary_output.lua
	rm -rf $(BUILD_PRODUCTS)

# The specs under valgrind (stock lua5.4 loading core.so): memory errors and definite leaks fail.
# Slow (tens of minutes); not part of make test.
valgrind: all
	valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	  --suppressions=scripts/test/valgrind.supp --num-callers=30 \
	  $(LUA) /usr/bin/busted --run=default -o scripts/test/summary_output.lua $(SPECS)

# 10,000 steps of a tiny model: RSS drift and live bytes (not part of make test)
long-run: all
	./build/bin/graphmert scripts/test/long_run.lua 10000

# libFuzzer harnesses (clang): the core and binding rebuilt with ASan, UBSan and coverage.
FUZZ_TARGETS := safetensors from_pretrained tokenizer wordnet jsonl dataset api
FUZZ_SECONDS ?= 30
FUZZ_FLAGS := -O1 -g -Wno-pass-failed -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
              $(LUA_CFLAGS) $(BLAS_CFLAGS)
build/fuzz/fuzz_lua: scripts/fuzz/fuzz_lua.c $(CORE_SRC) $(BIND_SRC) src/gm.h src/gm_internal.h src/lgm.h
	@mkdir -p build/fuzz
	clang $(FUZZ_FLAGS) -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer -fopenmp -Isrc -o $@ scripts/fuzz/fuzz_lua.c $(CORE_SRC) $(BIND_SRC) \
	  $(LUA_LIBS) $(BLAS_LIBS) -lm

# the checkpoint reader's own harnesses: the core alone, no Lua (scripts/fuzz/fuzz_<target>.c)
FUZZ_CORE_TARGETS := unpickle zip
build/fuzz/fuzz_%: scripts/fuzz/fuzz_%.c $(CORE_SRC) src/gm.h src/gm_internal.h src/gm_checkpoint_reader.h
	@mkdir -p build/fuzz
	clang $(FUZZ_FLAGS) -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer -fopenmp -Isrc -o $@ $< $(CORE_SRC) -lopenblas -lm

# each target for FUZZ_SECONDS (about 30 s) from its committed seed corpus; not part of make test
fuzz-smoke: build/fuzz/fuzz_lua $(FUZZ_CORE_TARGETS:%=build/fuzz/fuzz_%)
	scripts/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS) $(FUZZ_CORE_TARGETS)

install: all
	install -d $(DESTDIR)$(LIBDIR)/graphmert $(DESTDIR)$(LUADIR) $(DESTDIR)$(BINDIR)
	install -m 755 build/graphmert/core.so $(DESTDIR)$(LIBDIR)/graphmert/core.so
	cd lua && for f in $(patsubst lua/%,%,$(LUA_SRC) $(LUA_ASSETS)); do \
	  install -D -m 644 $$f $(DESTDIR)$(LUADIR)/$$f; done
	install -m 755 build/bin/graphmert $(DESTDIR)$(BINDIR)/graphmert
	for f in experiments/*.lua experiments/configs/*.lua experiments/data/tiny/*; do \
	  install -D -m 644 $$f $(DESTDIR)$(DATADIR)/$$f; done

uninstall:
	rm -rf $(DESTDIR)$(LIBDIR)/graphmert $(DESTDIR)$(LUADIR)/graphmert $(DESTDIR)$(BINDIR)/graphmert $(DESTDIR)$(DATADIR)

clean:
	rm -rf build
