/* gm_error.c — the thread-local last error: statuses instead of aborts. */
#include <stdarg.h>

#include "gm_internal.h"

static _Thread_local char last_message[512];
static _Thread_local int last_arg;
static _Thread_local gm_status last_status;

gm_status gm_fail(gm_status status, int arg, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_message, sizeof last_message, fmt, ap);
  va_end(ap);
  last_arg = arg;
  last_status = status;
  return status;
}

const char *gm_last_error(void) { return last_message[0] ? last_message : "no error"; }
int gm_last_error_arg(void) { return last_arg; }
gm_status gm_last_status(void) { return last_status; }
