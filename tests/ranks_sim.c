/* ranks_sim N STEPS [LAYERS] [straggler=R:S:MS] [hang=R:S:MS]: N ranks of a
   data-parallel run, for test_ranks.py and bench/ranks.sh. This process is
   the launcher: it starts N processes of this program (RANKS_SIM_RANK=r in
   their environment), each a rank that writes its trace to PROF_OUTPUT
   (with {rank}: one file per rank), as a rank under torchrun or mpirun
   would, and it plays their barrier: each rank writes a byte to the
   launcher when it arrives and reads one when all have.

   Every step of every rank, the known schedule:
     data_load     1 ms (a rank told by hang=R:S:MS stays MS ms in it at step S)
     compute       LAYERS regions "layer" inside (default 4), 1 ms in all;
                   the rank told by straggler=R:S:MS computes MS ms more at step S
     allreduce     > wait_peer: a barrier of the N processes (process-shared)
     PROF_SYNC()   right after it, as an engine calls it after its collective
   so at a straggler's step the other ranks wait its extra time in allreduce
   > wait_peer, and at a hang's step they wait there while it is in
   data_load (PROF_WATCHDOG and PROF_FLIGHT make every rank dump then).
   Exit status 0 when every rank exited 0.

   ranks_sim rss COMMAND [ARGS...]: runs COMMAND and prints its peak RSS
   ("peak_rss_kib N", its ru_maxrss) on stderr, exiting with its status. A
   child's ru_maxrss counts the memory of the process it was forked from
   until it execs: forked from this small one, it is COMMAND's own (forked
   from a test's Python, it would be Python's). */
#define _POSIX_C_SOURCE 200809L   /* fork, execv, pipe, nanosleep */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct { int rank, step, ms; } when;

static void sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

static int parse_when(const char *arg, const char *key, when *w) {
    size_t n = strlen(key);
    return strncmp(arg, key, n) == 0 && sscanf(arg + n, "%d:%d:%d", &w->rank, &w->step, &w->ms) == 3;
}

static int g_up, g_down;                /* the pipes to and from the launcher */

static void barrier(void) {
    char c = 0;
    if (write(g_up, &c, 1) != 1 || read(g_down, &c, 1) != 1) _exit(1);
}

static void play_rank(int rank, int world, int steps, int layers, when straggler, when hang) {
    PROF_SET_RANK(rank, world);
    PROF_THREAD_NAME("main");
    for (int s = 0; s < steps; s++) {
        {
            PROF_SCOPE("data_load");
            sleep_ms(rank == hang.rank && s == hang.step ? hang.ms : 1);
        }
        {
            PROF_SCOPE("compute");
            for (int k = 0; k < layers; k++) {
                PROF_SCOPE("layer");
                if (k == 0) sleep_ms(1);
            }
            if (rank == straggler.rank && s == straggler.step) sleep_ms(straggler.ms);
        }
        {
            PROF_SCOPE("allreduce");
            PROF_SCOPE("wait_peer");
            barrier();
        }
        PROF_SYNC();
        PROF_STEP();
    }
    PROF_SHUTDOWN();
}

static int peak_rss(char **cmd) {
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        execvp(cmd[0], cmd);
        _exit(127);
    }
    int status;
    struct rusage ru;                   /* of the one child: COMMAND */
    if (waitpid(pid, &status, 0) < 0 || getrusage(RUSAGE_CHILDREN, &ru) != 0) return 2;
    fprintf(stderr, "peak_rss_kib %ld\n", ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

int main(int argc, char **argv) {
    when straggler = { -1, -1, 0 }, hang = { -1, -1, 0 };
    if (argc > 2 && strcmp(argv[1], "rss") == 0) return peak_rss(argv + 2);
    if (argc < 3) {
        fprintf(stderr, "usage: ranks_sim N STEPS [LAYERS] [straggler=R:S:MS] [hang=R:S:MS]\n");
        return 2;
    }
    int world = atoi(argv[1]), steps = atoi(argv[2]), layers = 4;
    for (int i = 3; i < argc; i++)
        if (!parse_when(argv[i], "straggler=", &straggler) && !parse_when(argv[i], "hang=", &hang))
            layers = atoi(argv[i]);
    if (world < 1 || steps < 1 || layers < 1) return 2;

    const char *as_rank = getenv("RANKS_SIM_RANK");
    if (as_rank) {                              /* a rank: "r up down" */
        int rank;
        if (sscanf(as_rank, "%d %d %d", &rank, &g_up, &g_down) != 3) return 2;
        play_rank(rank, world, steps, layers, straggler, hang);
        return 0;
    }
    int up[2], *down = calloc((size_t)world, sizeof *down);
    if (!down || pipe(up) != 0) return 2;
    for (int r = 0; r < world; r++) {
        int d[2];
        char env[64];
        if (pipe(d) != 0) return 2;
        snprintf(env, sizeof env, "%d %d %d", r, up[1], d[0]);
        pid_t pid = fork();
        if (pid < 0) {
            perror("ranks_sim: fork");
            return 2;
        }
        if (pid == 0) {
            setenv("RANKS_SIM_RANK", env, 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        close(d[0]);
        down[r] = d[1];
    }
    close(up[1]);
    for (int s = 0; s < steps; s++) {           /* the barrier: all arrived, all go */
        char c;
        int arrived = 0;
        while (arrived < world && read(up[0], &c, 1) == 1) arrived++;
        if (arrived < world) break;             /* a rank died: its peers' reads end */
        for (int r = 0; r < world; r++)
            if (write(down[r], &c, 1) != 1) break;
    }
    for (int r = 0; r < world; r++) close(down[r]);
    free(down);
    int failed = 0, status;
    for (int r = 0; r < world; r++)
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
    if (failed) fprintf(stderr, "ranks_sim: %d ranks failed\n", failed);
    return failed ? 1 : 0;
}
