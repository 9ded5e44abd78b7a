/* say.c - how the tool speaks: one line on stderr, "<command>: ...", and
   die(), which says why and ends the command (exit 2, or a jump back for a
   driver that runs commands in-process, as the fuzzer does). */
#include "tool.h"

#include <stdlib.h>

const char *g_prog = "prof";            /* or the command's: "prof merge", "prof table", "prof diff" */
int g_quiet;                            /* say nothing (the fuzzer's default) */
jmp_buf *g_die_jump;                    /* set: die() jumps here instead of exiting */

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
    vnote(fmt, ap);
    va_end(ap);
    if (g_partial) remove(g_partial);
    if (g_die_jump) longjmp(*g_die_jump, 1);
    exit(2);
}
