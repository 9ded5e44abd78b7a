/* PROF_COUNTERS where perf_event_open is refused: a seccomp filter
   installed here answers it EPERM, as a container's profile does. One line
   says so (and how to allow it), no counter is in the cycle, and the trace
   is written whole. */
#define _POSIX_C_SOURCE 200809L
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "../prof.h"
#include "check.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

static volatile uint64_t sink;

static int refuse_perf_event_open(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof f / sizeof f[0]), f };
    return prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static size_t counters_seen;
static void ready(const prof_cycle *c, void *user) {
    (void)user;
    for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
        prof_event e;
        if (prof_cycle_event(c, i, &e) && e.kind == PROF_EVENT_COUNTER) counters_seen++;
    }
    CHECK(prof_cycle_write_trace(c, "refused.json"));
}

int main(void) {
    if (!refuse_perf_event_open()) {
        printf("SKIP: no seccomp filter here\n");
        return 77;
    }
    remove("refused.log");
    remove("refused.json");
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.counters = "task-clock,context-switches,page-faults,cycles,instructions";
    cfg.on_trace_ready = ready;
    setenv("PROF_LOG", "refused.log", 1);
    PROF_INIT(&cfg);
    for (int s = 0; s < 3; s++) {
        PROF_SCOPE("work");
        for (long i = 0; i < 2000000; i++) sink = sink * 31 + (uint64_t)i;
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    CHECK_EQ(counters_seen, 0);
    char *log = slurp("refused.log");
    CHECK(log != NULL);
    if (log) {
        int lines = 0;
        for (char *p = log; (p = strstr(p, "PROF_COUNTERS")) != NULL; p++) lines++;
        CHECK_EQ(lines, 1);
        CHECK(strstr(log, "prof: PROF_COUNTERS: perf_event_open is refused (") != NULL);
        CHECK(strstr(log, "seccomp") != NULL);
        fputs(log, stdout);
    }
    char *js = slurp("refused.json");
    CHECK(js != NULL);
    if (js) {
        size_t n = strlen(js);
        while (n && (js[n - 1] == '\n' || js[n - 1] == ' ')) n--;
        CHECK(n && js[n - 1] == '}');
        CHECK(strstr(js, "\"traceEvents\"") != NULL);
        CHECK_EQ(strstr(js, "\"ProfilerStep#2\"") != NULL, 1);
        CHECK(strstr(js, "task-clock") == NULL);
    }
    return failures != 0;
}
