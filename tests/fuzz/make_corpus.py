#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz: corpus/env and corpus/merge.

    python3 tests/fuzz/make_corpus.py        (from anywhere; rewrites both)

The seeds are small on purpose: a fuzzer mutates them, it does not need
volume. Inputs a fuzzer found worth keeping (a crash, once fixed) go in the
same directories by hand, named after what they show; this script leaves
files it did not write alone.

corpus/env: the first byte picks the parser (see fuzz_env.c), the rest is the
value. Printable selectors keep the files readable:
    '0' PROF_SCHEDULE   '1' PROF_TABLE   '2' PROF_RANKS   '3' PROF_BUFFER_MB
    '4' ':' '@' 'F'     a path template, with rank -1, 0, 7, INT_MAX
    '5' a value as a message quotes it

corpus/merge: one trace, or two joined by a NUL byte (fuzz_merge.c). The
real ones are two ranks of tests/merge_ranks.c, written by prof.h."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

ENV = {
    # PROF_SCHEDULE
    "sched_active": "0active=3",
    "sched_full": "0skip_first=3,wait=5,warmup=1,active=3,repeat=1",
    "sched_sum_overflow": "0wait=2147483647,active=1",
    "sched_active_zero": "0wait=1,active=0",
    "sched_control_bytes": "0active=1\nwait=\x01x",
    "sched_empty_item": "0active=1,,repeat=2",
    "sched_no_key": "0=3",
    "sched_too_big": "0active=99999999999",
    # PROF_TABLE
    "table_one": "11",
    "table_sort_rows": "1sort=self_cpu,rows=10",
    "table_all_keys": "1sort=cuda_time_total,rows=5,group=args+thread,ranks=all",
    "table_bad_sort": "1sort=nope",
    "table_negative_rows": "1rows=-1",
    "table_trailing_comma": "1group=thread,",
    # PROF_RANKS
    "ranks_zero": "20",
    "ranks_list": "20,2-3",
    "ranks_all": "2all",
    "ranks_backwards": "23-1",
    "ranks_trailing_comma": "20,",
    "ranks_open_range": "21-",
    "ranks_huge": "299999999999999999999",
    "ranks_many": "20,1,2,5-7,10-2147483647",
    # PROF_BUFFER_MB
    "uint_64": "364",
    "uint_zero": "30",
    "uint_plus": "3+64",
    "uint_space": "3 64",
    "uint_too_big": "32147483648",
    "uint_minus": "3-1",
    "uint_unit": "364MB",
    "uint_empty": "3",
    # path templates
    "path_default": "4prof_trace_{pid}.json",
    "path_cycle_rank0": ":runs/{rank}/trace.{cycle}.json",
    "path_dotted_dir_rank7": "@dir.d/trace",
    "path_gz": "4runs/t.json.gz",
    "path_gz_only": "4dir.d/t.gz",
    "path_all_max_rank": "F{cycle}{rank}{pid}{rank",
    "path_longest_fit": "4" + "a" * 4090 + ".json",
    "path_log_too_long": "4" + "b" * 5000,
    "path_rank_grows_max_rank": "F" + "{rank}" * 600,
    # quoting
    "quote_control": "5hello\nworld\x01\x7f\\",
    "quote_long": "5" + "y" * 300,
}

# Two ranks of tests/merge_ranks.c (2 rounds), as prof.h wrote them, less
# their thread_sort_index events.
REAL = []
for rank, pid, t in ((0, 16203, (119992.796, 120254.948, 124829.138, 124830.541, 124830.551, 125047.207,
                                 125052.247, 125052.257)),
                     (1, 16206, (143583.680, 144030.758, 144069.280, 144069.331, 144069.340, 144458.390,
                                 144459.192, 144459.202))):
    ev = [
        '{"ph":"M","name":"process_name","pid":%d,"tid":0,"ts":0.000,"args":{"name":"merge_ranks rank %d"}}'
        % (pid, rank),
        '{"ph":"M","name":"process_labels","pid":%d,"tid":0,"ts":0.000,"args":{"labels":"CPU"}}' % pid,
        '{"ph":"M","name":"process_sort_index","pid":%d,"tid":0,"ts":0.000,"args":{"sort_index":%d}}' % (pid, pid),
        '{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"ts":0.000,"args":{"name":"main"}}' % (pid, pid),
    ]
    for k in range(2):
        w, a, s, c = t[4 * k:4 * k + 4]
        ev += [
            '{"ph":"X","cat":"user_annotation","name":"work","pid":%d,"tid":%d,"ts":%.3f,"dur":219.842}'
            % (pid, pid, w),
            '{"ph":"i","s":"t","cat":"cpu_instant_event","name":"arrive","pid":%d,"tid":%d,"ts":%.3f}'
            % (pid, pid, a),
            '{"ph":"i","s":"p","cat":"prof_sync","name":"prof_sync","pid":%d,"tid":%d,"ts":%.3f,"args":{"sync":%d}}'
            % (pid, pid, s, k),
            '{"ph":"C","name":"round","pid":%d,"tid":%d,"ts":%.3f,"args":{"round":%d}}' % (pid, pid, c, k),
        ]
    REAL.append(
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [],\n'
        '  "distributedInfo": {"backend": "unknown", "rank": %d, "world_size": 2},\n'
        '  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1795468327000000000,\n'
        '  "traceName": "rank%d.json",\n  "prof_dropped_events": 0,\n  "prof_clipped_regions": 0,\n'
        '  "traceEvents": [\n%s\n  ]\n}' % (rank, rank, ",".join(ev)))

# A rank with a GPU, in the shape prof.h writes: device 0 labelled, a kernel,
# an annotation, a flow from the launch to the kernel, a synchronisation, a
# counter, escapes.
GPU = (
    '{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"Fake GPU","totalGlobalMem":1024}],'
    '"distributedInfo":{"rank":1,"world_size":2},"baseTimeNanoseconds":1700000000000000000,'
    '"traceEvents":['
    '{"ph":"M","name":"process_name","pid":77,"tid":0,"ts":0.000,"args":{"name":"tr\\u00e9n \\"x\\""}},'
    '{"ph":"M","name":"process_labels","pid":0,"tid":0,"ts":0.000,"args":{"labels":"GPU 0"}},'
    '{"ph":"X","cat":"cuda_runtime","name":"launch","pid":77,"tid":77,"ts":10.5,"dur":2,"args":{"correlation":7}},'
    '{"ph":"s","cat":"ac2g","name":"ac2g","id":7,"pid":77,"tid":77,"ts":10.5},'
    '{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":12.25,"dur":30,"args":{"correlation":7}},'
    '{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":7,"pid":0,"tid":7,"ts":12.25},'
    '{"ph":"X","cat":"cuda_sync","name":"Event Sync","pid":0,"tid":999999,"ts":13,"dur":29,"args":{'
    '"cuda_sync_kind":"Event Sync","wait_on_stream":7,"wait_on_cuda_event_record_corr_id":7,'
    '"wait_on_cuda_event_id":1,"stream":-1,"correlation":8,"device":0,"context":1}},'
    '{"ph":"X","cat":"gpu_user_annotation","name":"step","pid":0,"tid":8,"ts":12,"dur":31},'
    '{"ph":"b","cat":"async","name":"io","id":-3,"pid":77,"tid":77,"ts":1e1},'
    '{"ph":"i","s":"p","cat":"prof_sync","name":"prof_sync","pid":77,"tid":77,"ts":5.000,"args":{"sync":0}},'
    '{"ph":"C","name":"mem","pid":77,"tid":77,"ts":-1.5,"args":{"bytes":4096}}'
    ']}')

MERGE = {
    "real_rank0.json": REAL[0],
    "real_two_ranks": REAL[0] + "\0" + REAL[1],
    "gpu_rank1.json": GPU,
    "cpu_and_gpu": REAL[0] + "\0" + GPU,
    "no_rank_two": '{"traceEvents":[]}\0{"traceEvents":[{"ph":"X","pid":1,"ts":0}]}',
    "same_rank": REAL[0] + "\0" + REAL[0],
    "no_common_sync": REAL[0] + "\0" + REAL[1].replace('"sync":', '"sync":1'),
    "repeated_sync":
        '{"traceEvents":[{"ph":"i","cat":"prof_sync","ts":1,"args":{"sync":0}},'
        '{"ph":"i","cat":"prof_sync","ts":2,"args":{"sync":0}}]}',
    "pretty_events_first.json":
        '{\n "traceEvents" : [ { "ph" : "X" , "pid" : "Spans" , "ts" : 0.0004 , "dur" : 1 } ] ,\n'
        ' "baseTimeNanoseconds" : 1.7e18 , "extra" : [ null , true , false , -0.5E-3 , { } , [ ] ]\n}\n',
    # malformed
    "bad_truncated.json": REAL[0][:700],
    "bad_top_array.json": "[1,2,3]",
    "bad_no_events.json": '{"schemaVersion":1}',
    "bad_event_not_object.json": '{"traceEvents":[1]}',
    "bad_base.json": '{"baseTimeNanoseconds":"soon","traceEvents":[]}',
    "bad_rank.json": '{"distributedInfo":{"rank":1000},"traceEvents":[]}',
    "bad_gpu_pid.json":
        '{"traceEvents":[{"ph":"X","cat":"kernel","pid":100,"ts":1},{"ph":"X","cat":"kernel","pid":"gpu","ts":1}]}',
    "bad_ts_range.json": '{"traceEvents":[{"ph":"X","pid":1,"ts":1e300}]}',
    "bad_utf8.json": '{"traceEvents":[{"name":"\xed\xa0\x80"}]}',
    "bad_escape.json": '{"traceEvents":[{"name":"\\x41"}]}',
    "bad_trailing_comma.json": '{"traceEvents":[{"ph":"X"},]}',
    "bad_deep.json": '{"traceEvents":[' + "[" * 1100 + "]" * 1100 + "]}",
    # found by reading prof_merge.c, shown by fuzz_merge (UBSan), fixed: a
    # repeated id was not range checked; the base, floored to a whole second,
    # could go below INT64_MIN
    "regress_repeated_id.json": '{"traceEvents":[{"ph":"s","id":9223372036854775807,"id":1,"pid":1,"ts":0}]}',
    # found by fuzz_merge once it read traces as `prof table` does: an X
    # event without dur made span_scaled add 0 to a NULL pointer
    "regress_no_dur.json": '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1}]}',
    "regress_base_floor.json":
        '{"baseTimeNanoseconds":-9223372036854775000,"traceEvents":[{"ph":"X","pid":1,"ts":-0.5}]}',
}


def write(sub, files):
    d = os.path.join(HERE, "corpus", sub)
    os.makedirs(d, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(text.encode("latin-1") if sub == "merge" and name == "bad_utf8.json" else text.encode("utf-8"))


write("env", ENV)
write("merge", MERGE)
