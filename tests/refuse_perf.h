/* A seccomp filter that answers perf_event_open EPERM, as a container's
   profile does, installed on the calling thread (and those it starts): 1
   when it is in place. For the tests of what prof.h does when the kernel
   refuses it (test_sample_refused.c, test_counters_refused.c), with what
   both check after: the one line that says so, and a whole trace. */
#ifndef PROF_TEST_REFUSE_PERF_H
#define PROF_TEST_REFUSE_PERF_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "check.h"

static inline int refuse_perf_event_open(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof f / sizeof f[0]), f };
    return prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* log (PROF_LOG's file) names option once, in the line that says the call
   is refused and names seccomp; it is printed. */
static inline void check_refusal_said(const char *log_path, const char *option) {
    char *log = check_slurp(log_path), said[96];
    CHECK(log != NULL);
    if (!log) return;
    int lines = 0;
    for (char *p = log; (p = strstr(p, option)) != NULL; p++) lines++;
    CHECK_EQ(lines, 1);
    snprintf(said, sizeof said, "prof: %s: perf_event_open is refused (", option);
    CHECK(strstr(log, said) != NULL);
    CHECK(strstr(log, "seccomp") != NULL);
    fputs(log, stdout);
}

/* The JSON trace at path, whole: an object with its traceEvents, up to its
   closing brace. Its text, for the test's own checks (check_slurp's buffer),
   or NULL. */
static inline char *check_whole_json(const char *path) {
    char *js = check_slurp(path);
    CHECK(js != NULL);
    if (!js) return NULL;
    size_t n = strlen(js);
    while (n && (js[n - 1] == '\n' || js[n - 1] == ' ')) n--;
    CHECK(n && js[n - 1] == '}');
    CHECK(strstr(js, "\"traceEvents\"") != NULL);
    return js;
}

#endif
