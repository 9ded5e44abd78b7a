/* say.c - how the tool speaks: one line on stderr, "<command>: ...", and
   die(), which says why and ends the command (exit 2, or a jump back for a
   driver that runs commands in-process, as the fuzzer does). */
#include "tool.h"

#include <stdlib.h>

const char *g_prog = "prof";            /* or the command's: "prof merge", "prof table", "prof diff" */
int g_quiet;                            /* say nothing (the fuzzer's default) */
_Thread_local jmp_buf *g_die_jump;      /* set: die() jumps here instead of exiting */
_Thread_local char *g_die_text;         /* set: die() writes its line here (DIE_TEXT bytes), not on stderr */

static void vnote(const char *fmt, va_list ap) {
    if (g_quiet) return;
    fputs(g_prog, stderr);
    fputs(": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(fmt, ap);
    va_end(ap);
}

_Noreturn void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (g_die_text) {
        int n = snprintf(g_die_text, DIE_TEXT, "%s: ", g_prog);
        vsnprintf(g_die_text + n, DIE_TEXT - (size_t)n, fmt, ap);
    } else {
        vnote(fmt, ap);
    }
    va_end(ap);
    if (g_partial) remove(g_partial);
    if (g_die_jump) longjmp(*g_die_jump, 1);
    exit(2);
}
