/* main.c — the graphmert interpreter: Lua 5.4 with the C core and every module under lua/
 * preloaded. Command line as lua(1): graphmert [options] [script [args]], with -e stat,
 * -l mod, -i, -v, -E, -- and -. With a terminal on stdin and no script it opens a REPL
 * (readline, history in $GRAPHMERT_HISTORY or ~/.graphmert_history, bare expressions print, TAB
 * completes names and ?name prints help: both from lua/graphmert/repl.lua). */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "lgm.h"
#include "main_arena.h"
#include "datadir.h" /* GM_DATADIR: build/gen, made by the Makefile */
#include "lualib.h"

int luaopen_graphmert_core(lua_State *L);
void lgm_preload_lua(lua_State *L); /* build/gen/embedded_lua.c */

static const char *progname = "graphmert";
static lua_State *global_L = NULL;

/* Ctrl-C while Lua runs: stop at the next hook with an error, as lua.c does. A second Ctrl-C
 * while the script is still finishing what the first interrupted (writing its partial results) is
 * absorbed, so two quick ones do not lose that work; a third ends the process at once. */
static volatile sig_atomic_t interrupts;
/* While `held` (graphmert.interrupts.hold: a training step, so a checkpoint never holds half of
 * one), the first Ctrl-C is only noted in `pending` and raised when the hold ends. */
static volatile sig_atomic_t held, pending;

static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void on_interrupt(int sig) {
  if (++interrupts == 1) {
    if (held)
      pending = 1;
    else
      lua_sethook(global_L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  } else if (interrupts == 2) {
    static const char note[] = "\n(finishing what was interrupted; Ctrl-C again to quit at once)\n";
    if (write(2, note, sizeof note - 1) < 0) { /* nothing to do about it in a handler */ }
  } else {
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

/* graphmert.interrupts.hold(fn, ...) → fn's results: fn runs whole, a Ctrl-C that comes meanwhile
 * is raised ("interrupted!") when it returns; holds nest. An error in fn passes through. */
static int hold_interrupts(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  sig_atomic_t outer = held;
  held = 1;
  int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
  held = outer;
  if (status != LUA_OK) return lua_error(L);
  if (!outer && pending) {
    pending = 0;
    return luaL_error(L, "interrupted!");
  }
  return lua_gettop(L);
}

static int open_interrupts(lua_State *L) {
  lua_newtable(L);
  lua_pushcfunction(L, hold_interrupts);
  lua_setfield(L, -2, "hold");
  return 1;
}

/* an error object of kind "usage" (gm.errors.raise("usage", ...): a bad command line or config)
 * ends the process with status 2, as getopt tools do */
static int usage_failure = 0;

static void report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (usage_failure) /* the message names the script or command already */
      fprintf(stderr, "%s\n", msg ? msg : "(error object is not a string)");
    else
      fprintf(stderr, "%s: %s\n", progname, msg ? msg : "(error object is not a string)");
    fflush(stderr);
    lua_pop(L, 1);
  }
}

static int traceback_handler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (lua_istable(L, 1) && lua_getfield(L, 1, "kind") == LUA_TSTRING &&
        strcmp(lua_tostring(L, -1), "usage") == 0)
      usage_failure = 1;
    lua_settop(L, 1);
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1; /* no traceback */
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int docall(lua_State *L, int nargs, int nres) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, traceback_handler);
  lua_insert(L, base);
  global_L = L;
  interrupts = 0;
  pending = 0;
  signal(SIGINT, on_interrupt);
  int status = lua_pcall(L, nargs, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

static void preload(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_graphmert_core);
  lua_setfield(L, -2, "graphmert.core");
  lua_pushcfunction(L, open_interrupts);
  lua_setfield(L, -2, "graphmert.interrupts");
  lua_pop(L, 1);
  /* GRAPHMERT_DEV=1 loads lua/ from LUA_PATH instead, to edit without rebuilding */
  const char *dev = getenv("GRAPHMERT_DEV");
  if (!dev || strcmp(dev, "1") != 0) lgm_preload_lua(L);
}

/* arg table as lua(1) builds it: arg[0] = script, negative indices before it */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  if (script == argc) script = 0; /* no script: arg[0] is the program */
  lua_createtable(L, argc - script - 1, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  report(L, status);
  return status;
}

static int run_script(lua_State *L, char **argv, int script, int argc) {
  const char *fname = argv[script];
  if (strcmp(fname, "-") == 0 && strcmp(argv[script - 1], "--") != 0) fname = NULL;
  int status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = 0;
    lua_getglobal(L, "arg");
    for (int i = script + 1; i < argc; i++, n++) {
      lua_rawgeti(L, -1 - n, i - script);
    }
    lua_remove(L, -1 - n);
    status = docall(L, n, LUA_MULTRET);
  }
  report(L, status);
  return status;
}

/* Whether graphmert.experiment.commands names `word` as one of its commands. */
static int is_known_command(lua_State *L, const char *word) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "graphmert.experiment.commands");
  if (docall(L, 1, 1) != LUA_OK) {
    lua_pop(L, 1);
    return 0;
  }
  lua_getfield(L, -1, "known");
  lua_pushstring(L, word);
  int known = docall(L, 1, 1) == LUA_OK && lua_toboolean(L, -1);
  lua_pop(L, 2);
  return known;
}

/* A bare word (no '/', no '.') is a subcommand when it names one ("train", "configs"), whatever
 * the current folder holds (a folder called train is common), or when no regular file has that
 * name (the commands module then says it knows no such command): the Lua module
 * graphmert.experiment.commands runs the shipped script for it. Any other script file runs as
 * lua(1) would, and one named like a command runs given as ./train. */
static int is_command(lua_State *L, const char *word) {
  if (!word[0] || word[0] == '-' || strchr(word, '/') || strchr(word, '.')) return 0;
  struct stat sb;
  return stat(word, &sb) != 0 || !S_ISREG(sb.st_mode) || is_known_command(L, word);
}

static int run_command(lua_State *L, char **argv, int script, int argc) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "graphmert.experiment.commands");
  int status = docall(L, 1, 1);
  if (status == LUA_OK) {
    if (GM_DATADIR[0]) { /* one more place to look for the shipped files */
      lua_pushliteral(L, GM_DATADIR);
      lua_setfield(L, -2, "installed_home");
    }
    lua_getfield(L, -1, "main");
    lua_remove(L, -2);
    luaL_checkstack(L, argc - script, "too many arguments");
    for (int i = script; i < argc; i++) lua_pushstring(L, argv[i]);
    status = docall(L, argc - script, 0);
  }
  report(L, status);
  return status;
}

static int require_global(lua_State *L, const char *spec) {
  /* -l name or -l g=name, as in Lua 5.4.6 */
  char buf[256];
  const char *eq = strchr(spec, '=');
  const char *modname = eq ? eq + 1 : spec;
  size_t glen = eq ? (size_t)(eq - spec) : strlen(spec);
  if (glen >= sizeof buf) glen = sizeof buf - 1;
  memcpy(buf, spec, glen);
  buf[glen] = 0;
  lua_getglobal(L, "require");
  lua_pushstring(L, modname);
  int status = docall(L, 1, 1);
  if (status == LUA_OK) lua_setglobal(L, buf);
  report(L, status);
  return status;
}

/* ---- the REPL ---------------------------------------------------------------------------- */

static char history_path[1024];

static void history_open(void) {
  const char *env = getenv("GRAPHMERT_HISTORY");
  const char *home = getenv("HOME");
  if (env) snprintf(history_path, sizeof history_path, "%s", env);
  else if (home) snprintf(history_path, sizeof history_path, "%s/.graphmert_history", home);
  else return;
  FILE *f = fopen(history_path, "a"); /* append_history needs the file to exist */
  if (f) fclose(f);
  read_history(history_path);
}

/* Ctrl-C while a line is typed drops what was typed (the chunk too, for a ">>" line) and gives
 * a new prompt, as Python's does: the session and its variables stay. Readline cleans the
 * terminal up and passes the signal on to this handler, which leaves readline. */
static sigjmp_buf prompt_jump;
static void on_prompt_interrupt(int sig) {
  (void)sig;
  siglongjmp(prompt_jump, 1);
}

/* 1: a line (pushed), 0: the end of the input, 2: Ctrl-C (nothing pushed) */
static int read_line(lua_State *L, int first) {
  const char *prompt = first ? "> " : ">> ";
  if (sigsetjmp(prompt_jump, 1) != 0) {
    signal(SIGINT, SIG_DFL);
    rl_free_line_state();
    rl_cleanup_after_signal();
    RL_UNSETSTATE(RL_STATE_SIGHANDLER); /* (the jump skipped readline's own epilogue) */
    fputs("\n", stdout); /* readline echoed ^C when the terminal does (ECHOCTL) */
    return 2;
  }
  signal(SIGINT, on_prompt_interrupt);
  char *line = readline(prompt);
  signal(SIGINT, SIG_DFL);
  if (!line) return 0;
  size_t len = strlen(line);
  if (len > 0) {
    add_history(line);
    if (history_path[0]) append_history(1, history_path);
  }
  lua_pushstring(L, line);
  free(line);
  return 1;
}

/* TAB: the completions of the word before the cursor, from graphmert.repl's complete (kept in
 * the registry by repl()). Readline frees the strings it is given. */
#define REPL_COMPLETE_KEY "graphmert.repl.complete"
#define REPL_SHOW_KEY "graphmert.repl.show" /* how the REPL prints results */
static lua_State *completion_L;
static int completion_next, completion_count;

static char *next_completion(const char *text, int state) {
  (void)text; /* the list on the stack was made for it */
  lua_State *L = completion_L;
  if (state == 0) completion_next = 1;
  if (completion_next > completion_count) return NULL;
  lua_rawgeti(L, -1, completion_next++);
  char *word = strdup(lua_tostring(L, -1));
  lua_pop(L, 1);
  return word;
}

/* Whether position `end` of the line is inside a quoted string (t["na<TAB>: no names there). */
static int in_string(const char *line, int end) {
  char quote = 0;
  for (int i = 0; i < end && line[i]; i++) {
    if (quote && line[i] == '\\' && line[i + 1]) i++;
    else if (quote && line[i] == quote) quote = 0;
    else if (!quote && (line[i] == '"' || line[i] == '\'')) quote = line[i];
  }
  return quote != 0;
}

static char **complete_word(const char *text, int start, int end) {
  (void)end;
  rl_attempted_completion_over = 1;      /* no file names when nothing matches */
  rl_completion_append_character = '\0'; /* "gm.nn" may go on with "." */
  if (in_string(rl_line_buffer, start)) return NULL;
  lua_State *L = completion_L;
  int top = lua_gettop(L);
  char **matches = NULL;
  lua_getfield(L, LUA_REGISTRYINDEX, REPL_COMPLETE_KEY);
  lua_pushstring(L, text);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    completion_count = (int)luaL_len(L, -1);
    matches = rl_completion_matches(text, next_completion);
  }
  lua_settop(L, top);
  return matches;
}

/* Sets up completion and the global help(); without graphmert.repl the REPL still runs. */
static void repl_helpers_open(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "graphmert.repl");
  if (docall(L, 1, 1) != LUA_OK) {
    report(L, LUA_ERRRUN);
    return;
  }
  lua_getfield(L, -1, "help");
  lua_setglobal(L, "help");
  lua_getfield(L, -1, "complete");
  lua_setfield(L, LUA_REGISTRYINDEX, REPL_COMPLETE_KEY);
  lua_getfield(L, -1, "show");
  lua_setfield(L, LUA_REGISTRYINDEX, REPL_SHOW_KEY);
  lua_pop(L, 1);
  completion_L = L;
  /* '.' and ':' stay inside a word, so gm.nn.Li and t:ma complete as one */
  rl_completer_word_break_characters = " \t\n\"'`@$><=;|&{}()[],+-*/%^~#";
  rl_attempted_completion_function = complete_word;
}

/* "?name" is help("name") (name: letters, digits, '_', '.', ':'); "?" alone is help(). */
static int is_help_line(const char *line) {
  if (line[0] != '?') return 0;
  size_t n = strlen(line + 1);
  while (n > 0 && line[n] == ' ') n--;
  return strspn(line + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:") == n;
}

/* The line is `word` alone (spaces around it, an optional "()" after it). */
static int is_word_line(const char *line, const char *word) {
  line += strspn(line, " \t");
  size_t n = strlen(word);
  if (strncmp(line, word, n) != 0) return 0;
  line += n;
  if (strncmp(line, "()", 2) == 0) line += 2;
  return line[strspn(line, " \t")] == '\0';
}

/* `quit` or `exit` alone ends the REPL, as Ctrl-D does, unless the user made a global of that
 * name (a bare name would otherwise print nil, and people type it to leave). */
static int is_quit_line(lua_State *L, const char *line) {
  const char *word = is_word_line(line, "quit") ? "quit" : is_word_line(line, "exit") ? "exit" : NULL;
  if (!word) return 0;
  int defined = lua_getglobal(L, word) != LUA_TNIL;
  lua_pop(L, 1);
  return !defined;
}

/* A line ending in ';' is run without printing its value (trepl). */
static int ends_with_semicolon(const char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  return n > 0 && s[n - 1] == ';';
}

/* Tries "return <line>" first, so bare expressions print. Leaves the chunk on the stack; -1 at
 * the end of the input, -2 when Ctrl-C dropped the input (nothing on the stack). */
static int load_line(lua_State *L, int *print_results) {
  int got = read_line(L, 1);
  if (got == 0) return -1;
  if (got == 2) return -2;
  const char *line = lua_tostring(L, -1);
  if (is_quit_line(L, line)) {
    lua_pop(L, 1);
    return -1;
  }
  if (is_word_line(line, "help")) { /* bare `help` is help(), not the function's address */
    lua_pushliteral(L, "help();");
    lua_remove(L, -2);
    line = lua_tostring(L, -1);
  } else if (is_help_line(line)) {
    size_t n = strspn(line + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:");
    lua_pushfstring(L, n ? "help(\"%s\");" : "help();", lua_pushlstring(L, line + 1, n));
    lua_remove(L, -2);
    lua_remove(L, -2);
    line = lua_tostring(L, -1);
  } else if (line[0] == '=') { /* =expr, as in Lua 5.1 */
    lua_pushfstring(L, "return %s", line + 1);
    lua_remove(L, -2);
    line = lua_tostring(L, -1);
  }
  *print_results = !ends_with_semicolon(line);
  /* "x;" evaluates x without printing it */
  size_t len = strlen(line);
  while (!*print_results && len > 0 && line[len - 1] != ';') len--;
  const char *retline =
      lua_pushfstring(L, "return %s;", lua_pushlstring(L, line, *print_results ? len : len - 1));
  lua_remove(L, -2);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK) {
    lua_remove(L, -2); /* the return line */
    lua_remove(L, -2); /* the line */
    return LUA_OK;
  }
  lua_pop(L, 2);
  for (;;) { /* as a statement, reading more lines while the chunk is incomplete */
    size_t code_len;
    const char *code = lua_tolstring(L, -1, &code_len);
    status = luaL_loadbuffer(L, code, code_len, "=stdin");
    if (status != LUA_ERRSYNTAX) break;
    size_t mlen;
    const char *msg = lua_tolstring(L, -1, &mlen);
    if (!(mlen >= 5 && strcmp(msg + mlen - 5, "<eof>") == 0)) break;
    lua_pop(L, 1);
    got = read_line(L, 0);
    if (got == 2) {
      lua_pop(L, 1); /* the chunk so far */
      return -2;
    }
    if (!got) break;
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
  lua_remove(L, -2);
  return status;
}

static void print_results(lua_State *L) {
  int n = lua_gettop(L);
  if (n > 0) {
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_getfield(L, LUA_REGISTRYINDEX, REPL_SHOW_KEY); /* graphmert.repl's show, else print */
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_getglobal(L, "print");
    }
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK)
      fprintf(stderr, "%s: error calling 'print' (%s)\n", progname, lua_tostring(L, -1));
  }
}

static void repl(lua_State *L) {
  lua_settop(L, 0); /* results are printed from the bottom of the stack */
  history_open();
  /* the REPL alone gets a global gm, as th gives torch */
  lua_getglobal(L, "require");
  lua_pushliteral(L, "graphmert");
  if (docall(L, 1, 1) == LUA_OK) lua_setglobal(L, "gm");
  else report(L, LUA_ERRRUN);
  repl_helpers_open(L);
  fputs("help() or ?name for the API (?gm: an overview), TAB completes, Ctrl-D or quit leaves\n", stdout);
  int status, show;
  while ((status = load_line(L, &show)) != -1) {
    if (status == -2) continue; /* Ctrl-C at the prompt */
    if (status == LUA_OK) status = docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK) {
      if (show) print_results(L);
    } else {
      report(L, status);
    }
    lua_settop(L, 0);
  }
  lua_settop(L, 0);
  fputc('\n', stdout);
}

static void print_version(void) {
  printf("graphmert %s -- %s\n", GM_VERSION, LUA_RELEASE);
  fflush(stdout);
}

static void usage(const char *badopt) {
  fprintf(stderr, "%s: unrecognized option '%s'\n", progname, badopt);
  fprintf(stderr,
          "usage: %s [options] [script [args]]   or   %s COMMAND [options] (graphmert help)\n"
          "  -e stat   execute string 'stat'\n"
          "  -i        enter interactive mode after running script\n"
          "  -l mod    require library 'mod' into global 'mod' (or -l g=mod)\n"
          "  -v        show version information (also --version)\n"
          "  -E        ignore environment variables (LUA_INIT)\n"
          "  --        stop handling options\n"
          "  -         stop handling options and execute stdin\n",
          progname, progname);
}

typedef struct {
  int argc;
  char **argv;
  int status;
} main_args;

static int pmain(lua_State *L) {
  main_args *ma = lua_touserdata(L, 1);
  int argc = ma->argc;
  char **argv = ma->argv;
  int interactive = 0, version = 0, no_env = 0, script = argc, has_exec = 0, help = 0;
  for (int i = 1; i < argc; i++) { /* first pass: find the script and the flags */
    const char *a = argv[i];
    if (a[0] != '-') { script = i; break; }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { script = i; help = 1; break; } /* as graphmert help */
    if (strcmp(a, "--") == 0) { script = i + 1 < argc ? i + 1 : argc; break; }
    if (strcmp(a, "-") == 0) { script = i; break; }
    if (strcmp(a, "-i") == 0) interactive = version = 1;
    else if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) version = 1;
    else if (strcmp(a, "-E") == 0) no_env = 1;
    else if (strcmp(a, "-e") == 0 || strcmp(a, "-l") == 0) {
      has_exec = 1;
      if (++i >= argc) { usage(a); return 0; }
    } else if ((a[1] == 'e' || a[1] == 'l') && a[2]) {
      has_exec = 1;
    } else { usage(a); return 0; }
  }
  luaL_checkversion(L);
  if (no_env) {
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  preload(L);
  create_arg_table(L, argv, argc, script);
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (version) print_version();
  if (!no_env) {
    const char *init = getenv("LUA_INIT_5_4");
    if (!init) init = getenv("LUA_INIT");
    if (init) {
      int st = init[0] == '@' ? luaL_loadfile(L, init + 1) : luaL_loadstring(L, init);
      if (dochunk(L, st) != LUA_OK) return 0;
    }
  }
  for (int i = 1; i < script; i++) { /* second pass: -e and -l in order */
    const char *a = argv[i];
    if (a[1] != 'e' && a[1] != 'l') continue;
    const char *value = a[2] ? a + 2 : argv[++i];
    int st = a[1] == 'e' ? dochunk(L, luaL_loadstring(L, value)) : require_global(L, value);
    if (st != LUA_OK) return 0;
  }
  if (script < argc && (help || is_command(L, argv[script]))) {
    if (run_command(L, argv, script, argc) != LUA_OK) return 0;
  } else if (script < argc && run_script(L, argv, script, argc) != LUA_OK) {
    return 0;
  }
  if (interactive) {
    repl(L);
  } else if (script == argc && !has_exec && !version) {
    if (isatty(0)) {
      print_version();
      repl(L);
    } else {
      dochunk(L, luaL_loadfile(L, NULL));
    }
  }
  ma->status = 1;
  return 0;
}

/* libgomp's threads wait for each other by spinning (300,000 rounds by default), and when another
 * busy process takes a core that spin collapses the speed (measured: 20 training steps took 103 s
 * next to a 1-core job instead of 14 s alone). A short spin costs nothing alone (13.6 s) and keeps
 * 15 s next to it. libgomp reads GOMP_SPINCOUNT once, when it is loaded, before main: so when
 * neither it nor OMP_WAIT_POLICY is set, the binary sets it and runs itself again (same process,
 * same arguments). If that exec fails, it goes on with libgomp's default. */
static void short_omp_spin(char **argv) {
  if (getenv("GOMP_SPINCOUNT") || getenv("OMP_WAIT_POLICY")) return;
  if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GOMP_SPINCOUNT");
}

int main(int argc, char **argv) {
  short_omp_spin(argv);
  if (argv[0] && argv[0][0]) progname = argv[0];
  lua_State *L = main_arena_newstate();
  if (!L) {
    fprintf(stderr, "%s: cannot create state: not enough memory\n", progname);
    return EXIT_FAILURE;
  }
  main_args ma = {argc, argv, 0};
  lua_pushcfunction(L, pmain);
  lua_pushlightuserdata(L, &ma);
  int status = lua_pcall(L, 1, 1, 0);
  report(L, status);
  lua_close(L);
  main_arena_release();
  int code = usage_failure ? 2 : status == LUA_OK && ma.status ? EXIT_SUCCESS : EXIT_FAILURE;
  /* under mpirun, a rank that fails ends the job rather than leave the others waiting in a
   * collective (mpi4py's -m mpi4py); one that ends well has MPI finalized at exit */
  if (code != EXIT_SUCCESS && gm_dist_size() > 1) gm_dist_abort(code);
  return code;
}
