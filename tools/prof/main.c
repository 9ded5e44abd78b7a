/* main.c - `prof`, the command-line tool of prof.h: reads the traces a run
   saved and dispatches to its commands (merge.c, ranks.c, table.c, diff.c,
   report.c); and the program's messages (one line on stderr, exit status 2
   on an error).

   Build: the CMake target prof_cli (its output is named prof: the library
   target is prof), or by hand from the repository root, every .c file of
   tools/prof at once:  cc -std=c11 -O2 -I. -o prof tools/prof/[a-z]*.c -lpthread -lm
   Files: tool.h (what they share), main.c, merge.c, ranks.c, table.c,
   diff.c, report.c, run.c (the commands; report_page.c takes in report's page, the
   report.html/.css/.js beside it), trace.c, read_json.c, read_pftrace.c,
   inflate.c (reading traces), prof_link.c (prof.h's implementation: the one
   file that uses its private names). */
#include "tool.h"

#include <string.h>

static const char usage[] =
    "usage: prof COMMAND [ARGS]\n"
    "\n"
    "Commands on the traces prof.h writes (.json, .json.gz, .pftrace; a gzipped\n"
    "one of either format is read as it is):\n"
    "\n"
    "  prof merge [-o merged.json] [--quiet] [--ranks LIST] rank0.json rank1.json ...\n"
    "      One trace of the per-rank traces of a distributed run, every rank\n"
    "      moved onto the clock of the lowest by the PROF_SYNC() points they\n"
    "      share. Perfetto traces merge into a Perfetto trace (-o merged.pftrace).\n"
    "      prof merge --help says more.\n"
    "  prof table TRACE [sort=self_cpu,rows=N,group=args|thread|domain|capture,percentiles]\n"
    "      The summary table of a saved trace: the table the run would have\n"
    "      printed with PROF_TABLE set to that spec (default: every row, by\n"
    "      self CPU time). GPU columns come from its kernels (or GPU regions,\n"
    "      without kernel capture), as the run's; memory columns are not rebuilt.\n"
    "      group=domain: NVTX's ranges by their domain (libprof_nvtx's).\n"
    "      group=capture: CUDA Graph kernels by the regions open when their\n"
    "      node was captured (their capture_region), a row \"[graph] a/b\" each.\n"
    "  prof diff BASE NEW [--min-change PCT] [--fail-over PCT]\n"
    "  prof diff BASE NEW [group=function] [--min-change PCT] [--fail-over PCT]\n"
    "      Per region, by name: calls, self and total time in both traces and\n"
    "      the change, largest change of self time first. Regions that changed\n"
    "      less than --min-change (default 5%) are left out. --fail-over PCT:\n"
    "      exit status 1 when a region of both grew in total time by more and,\n"
    "      where both have calls enough, its calls' times differ significantly\n"
    "      (Mann-Whitney U test, p < 0.05; the p column).\n"
    "      group=function: PROF_SAMPLE's self samples per function and their\n"
    "      share in both, largest gain of share first (--min-change in points).\n"
    "  prof ranks [--table-out DIR] [--min-lag MS] TRACE... | DIR\n"
    "      The ranks' traces of a distributed run compared, read in bounded\n"
    "      memory: per step each rank's time and the straggler, the spread of\n"
    "      each region across the ranks, hang dumps grouped by what each rank\n"
    "      is inside. prof ranks --help says more.\n"
    "  prof report TRACE... [-o FILE.html]\n"
    "  prof report --diff BASE NEW [-o FILE.html]\n"
    "      One self-contained HTML page (opens offline): step times and where\n"
    "      they went, prof table's rows, a flame graph, GPU kernels, memory,\n"
    "      ranks' steps (several traces); --diff: prof diff as a page. Default\n"
    "      FILE: the first trace's name with .html.\n"
    "  prof run [--] CMD [ARGS...]\n"
    "      Runs CMD with prof.h as its NVTX tool (NVTX_INJECTION64_PATH at\n"
    "      libprof_nvtx.so): every NVTX range, mark and thread name of every\n"
    "      library (NCCL's collectives with their sizes) goes into its trace,\n"
    "      nested in its regions; into the library's own recorder where CMD has\n"
    "      no prof.h. Another tool named already (Nsight): left to it.\n"
    "  prof help [COMMAND]\n"
    "      This text, or a command's.\n"
    "\n"
    "Exit status: 0 done, 1 prof diff's --fail-over exceeded, 2 an error (one\n"
    "line on stderr says why).\n";

/* ======================================================================== */
/*  main                                                                    */
/* ======================================================================== */

int main(int argc, char **argv) {
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (!cmd) {
        fputs(usage, stderr);
        return 2;
    }
    if (!strcmp(cmd, "merge")) {
        g_prog = "prof merge";
        return cmd_merge(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "table")) {
        g_prog = "prof table";
        return cmd_table(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "diff")) {
        g_prog = "prof diff";
        return cmd_diff(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "ranks")) {
        g_prog = "prof ranks";
        return cmd_ranks(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "report")) {
        g_prog = "prof report";
        return cmd_report(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "run")) {
        g_prog = "prof run";
        return cmd_run(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        const char *c = argc > 2 ? argv[2] : "";
        fputs(!strcmp(c, "merge") ? merge_usage : !strcmp(c, "ranks") ? ranks_usage : usage, stdout);
        return 0;
    }
    die("unknown command '%s' (prof help lists them)", cmd);
}
