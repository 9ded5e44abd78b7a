/* read_pftrace.c - Perfetto traces (.pftrace): a protobuf decoder, the
   packets of a file (a last one cut short by a killed run left out with a
   warning), and one packet decoder every reader goes through: the packet's
   sequence and its state (default clock and track, clock snapshots), its
   timestamp on REALTIME. Two readers on top: pf_scan, a trace's rank, drops,
   sync points and earliest time (the merge's pass 1, run as it is loaded);
   pf_to_model, its CPU regions for prof table and prof diff. merge.c
   rewrites packets with the same decoder. */
#include "tool.h"

#include <string.h>

static _Thread_local const trace *g_pf_t;   /* the trace being read, for messages (per thread: prof ranks reads several at once) */
static _Thread_local uint64_t g_pf_at;                /* where the packet being read is in it */

static _Noreturn void bad_pf(const char *what) {
    die("%s: not a Perfetto trace: %s in the packet at byte %" PRIu64, g_pf_t->path, what, g_pf_at);
}

/* ---- protobuf ---------------------------------------------------------- */

static int pb_varint(pbin *in, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (in->p >= in->end) return 0;
        uint8_t b = *in->p++;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) { *v = x; return 1; }
    }
    return 0;
}

/* The next field of a message; 0 at its end. Malformed bytes: bad_pf. */
int pb_next(pbin *in, pbfield *f) {
    uint64_t tag;
    if (in->p >= in->end) return 0;
    f->start = in->p;
    if (!pb_varint(in, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1FFFFFFF) bad_pf("a bad field tag");
    f->id = (uint32_t)(tag >> 3);
    f->wt = (uint32_t)(tag & 7);
    f->data = NULL;
    f->n = 0;
    f->v = 0;
    switch (f->wt) {
    case 0:
        if (!pb_varint(in, &f->v)) bad_pf("a varint cut short");
        break;
    case 1:
    case 5: {
        size_t k = f->wt == 1 ? 8 : 4;
        if ((size_t)(in->end - in->p) < k) bad_pf("a fixed field cut short");
        for (size_t i = 0; i < k; i++) f->v |= (uint64_t)in->p[i] << (8 * i);
        in->p += k;
        break;
    }
    case 2: {
        uint64_t n;
        if (!pb_varint(in, &n) || n > (uint64_t)(in->end - in->p)) bad_pf("a length past the packet's end");
        f->data = in->p;
        f->n = (size_t)n;
        in->p += n;
        break;
    }
    default:
        bad_pf("a wire type protobuf does not have");
    }
    f->stop = in->p;
    return 1;
}

pbin pb_sub(const pbfield *f) { return (pbin){ f->data, f->data + f->n }; }

int pb_is(const pbfield *f, const char *s) { return f->wt == 2 && f->n == strlen(s) && !memcmp(f->data, s, f->n); }

/* ---- packets ----------------------------------------------------------- */

/* The packets of a trace: *at and *n of the next, whole in the window;
   0 at the end. A last packet cut short (a killed run's file) ends it with
   a warning. */
int pf_packet(trace *t, const uint8_t **at, size_t *n) {
    window *w = &t->w;
    size_t i = (size_t)(t->next - w->off);
    if (w->n - i < 11 && !w->eof) {                 /* its tag and length whole */
        trace_more(t, i);
        i = 0;
    }
    if (i >= w->n) return 0;
    g_pf_t = t;
    g_pf_at = t->next;
    pbin in = { (const uint8_t *)w->buf + i, (const uint8_t *)w->buf + w->n };
    uint64_t len;
    if (*in.p++ != 0x0A) bad_pf("not a Trace.packet field");
    int has_len = pb_varint(&in, &len);
    size_t head = (size_t)(in.p - (const uint8_t *)w->buf) - i;
    if (has_len && len <= WIN_MAX - 16) {           /* the packet whole in the window */
        while (w->n - i - head < len && !w->eof) {
            trace_more(t, i);
            i = 0;
        }
    }
    if (!has_len || len > w->n - i - head) {
        uint64_t rest = w->n - i;                   /* the bytes left in the trace */
        while (!w->eof) rest += trace_more(t, w->n);
        if (has_len && len <= rest - head)
            die("%s: a packet of more than %zu MiB at byte %" PRIu64 ": too large to read in a bounded window",
                t->path, WIN_MAX >> 20, g_pf_at);
        if (!t->cut) note("warning: %s: its last %" PRIu64 " bytes are a packet cut short (a run killed while "
                          "writing?); left out", t->path, rest);
        t->cut = 1;
        t->next = w->off + w->n;
        return 0;
    }
    *at = (const uint8_t *)w->buf + i + head;
    *n = (size_t)len;
    g_pf_at = w->off + i + head;                    /* where the messages say it is from now */
    t->next = g_pf_at + len;
    return 1;
}

/* What the readers keep per sequence of a trace. */
struct pfseq {
    uint32_t id;
    uint32_t clock_id;                  /* TracePacketDefaults.timestamp_clock_id */
    uint32_t seq_clock;                 /* its own clock (64..127), 0: none */
    int incremental;
    int64_t last, to_real;              /* the clock's last reading; + to_real: REALTIME */
    uint64_t sync_iid, key_iid;         /* interned "prof_sync", "sync" (pf_scan); 0: not seen */
    uint64_t track;                     /* TrackEventDefaults.track_uuid (pf_to_model) */
};

static _Thread_local pfseq *g_pfseq;    /* global, so that die() leaves it reachable */
static _Thread_local size_t g_npfseq;

void pf_start(void) { g_npfseq = 0; }

/* The state of sequence id, added if new. A sequence's packets mostly come
   together: the last one found is tried first. */
static pfseq *pf_seq(uint32_t id) {
    static _Thread_local size_t last;
    if (last < g_npfseq && g_pfseq[last].id == id) return &g_pfseq[last];
    for (size_t i = 0; i < g_npfseq; i++)
        if (g_pfseq[i].id == id) return &g_pfseq[last = i];
    g_pfseq = xrealloc(g_pfseq, (g_npfseq + 1) * sizeof *g_pfseq);
    pfseq *s = &g_pfseq[last = g_npfseq++];
    memset(s, 0, sizeof *s);
    s->id = id;
    return s;
}

/* A packet's timestamp as REALTIME ns; 0 if it has none or it is on a clock
   the tool does not know. */
static int pf_time(pfseq *s, int has_ts, uint64_t ts, uint32_t clock, int64_t *abs_ns) {
    if (!has_ts) return 0;
    if (!clock) clock = s->clock_id;
    if (clock >= 64 && clock == s->seq_clock) {
        int64_t v = s->incremental ? add_ck(s->last, (int64_t)(ts & INT64_MAX)) : (int64_t)(ts & INT64_MAX);
        s->last = v;
        *abs_ns = add_ck(v, s->to_real);
        return 1;
    }
    if (clock == 0 || clock == 1) {      /* the trace's clock, REALTIME: prof.h's */
        *abs_ns = (int64_t)(ts & INT64_MAX);
        return 1;
    }
    return 0;
}

/* A clock snapshot: the sequence's own clock, its reading and REALTIME's. */
static void pf_snapshot(pfseq *s, const pbfield *f) {
    pbin sub = pb_sub(f), sub2;
    pbfield g, h;
    int64_t seq_v = 0, real_v = 0;
    int has_seq = 0, has_real = 0, inc = 0;
    uint32_t seq_id = 0;
    while (pb_next(&sub, &g)) {
        if (g.id != 1 || g.wt != 2) continue;
        uint64_t cid = 0, v = 0, incr = 0;
        sub2 = pb_sub(&g);
        while (pb_next(&sub2, &h)) {
            if (h.id == 1 && h.wt == 0) cid = h.v;
            if (h.id == 2 && h.wt == 0) v = h.v;
            if (h.id == 3 && h.wt == 0) incr = h.v;
        }
        if (cid >= 64 && cid < 128) { seq_id = (uint32_t)cid; seq_v = (int64_t)(v & INT64_MAX); inc = incr != 0; has_seq = 1; }
        if (cid == 1) { real_v = (int64_t)(v & INT64_MAX); has_real = 1; }
    }
    if (has_seq) {
        s->seq_clock = seq_id;
        s->incremental = inc;
        s->last = seq_v;
        s->to_real = has_real ? sub_ck(real_v, seq_v) : 0;
    }
}

/* The next packet, its sequence's state brought up to date: what every
   reader of packets needs before it reads what it came for. */
int pf_read(trace *t, pfpacket *pk) {
    const uint8_t *at;
    size_t n;
    uint64_t ts = 0;
    int has_ts = 0;
    if (!pf_packet(t, &at, &n)) return 0;
    memset(pk, 0, sizeof *pk);
    pk->at = at;
    pk->n = n;
    pbin in = { at, at + n }, sub, sub2;
    pbfield f, g, h;
    while (pb_next(&in, &f))        /* the sequence first: fields may come in any order */
        if (f.id == 10 && f.wt == 0) pk->seq = (uint32_t)f.v;
    pfseq *s = pk->s = pf_seq(pk->seq);
    in = (pbin){ at, at + n };
    while (pb_next(&in, &f)) {
        if (f.id == 8 && f.wt == 0) {
            ts = f.v;
            has_ts = 1;
        } else if (f.id == 58 && f.wt == 0) {
            pk->clock = (uint32_t)f.v;
        } else if (f.id == 13 && f.wt == 0 && (f.v & 1)) {      /* incremental state cleared */
            pk->cleared = 1;
        } else if (f.id == 11 && f.wt == 2) {
            pk->has_event = 1;
        } else if (f.id == 59 && f.wt == 2) {                   /* defaults: clock, track */
            sub = pb_sub(&f);
            while (pb_next(&sub, &g)) {
                if (g.id == 58 && g.wt == 0) s->clock_id = (uint32_t)g.v;
                if (g.id != 11 || g.wt != 2) continue;
                sub2 = pb_sub(&g);
                while (pb_next(&sub2, &h))
                    if (h.id == 11 && h.wt == 0) s->track = h.v;
            }
        } else if (f.id == 6 && f.wt == 2) {
            pf_snapshot(s, &f);
        }
    }
    if (!pk->clock) pk->clock = s->clock_id;
    pk->timed = pk->has_event && pf_time(s, has_ts, ts, pk->clock, &pk->abs_ns);
    return 1;
}

/* ---- pass 1: rank, drops, sync points ----------------------------------- */

/* A Perfetto trace's rank, drops and a dump's reason and step (trace
   attributes), the sync points (instants named prof_sync with a "sync"
   annotation), the earliest time, its highest sequence id. */
void pf_scan(trace *t) {
    pfpacket pk;
    t->nsync = t->nattrs = t->npackets = 0;
    t->max_seq = 0;
    t->timed = t->hang = 0;
    t->dump_step = -1;
    trace_rewind(t);
    pf_start();
    while (pf_read(t, &pk)) {
        pbin in = { pk.at, pk.at + pk.n }, sub, sub2;
        pbfield f, g, h;
        pfseq *s = pk.s;
        uint64_t type = 0, name_iid = 0, key = 0;
        int64_t sync = -1;
        if (pk.seq > t->max_seq) t->max_seq = pk.seq;
        if (pk.cleared) s->sync_iid = s->key_iid = 0;   /* before this packet's interned names */
        while (pb_next(&in, &f)) {
            if (f.id == 12 && f.wt == 2) {               /* interned names: which iids matter */
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {
                    if ((g.id != 2 && g.id != 3) || g.wt != 2) continue;
                    uint64_t iid = 0;
                    int match = 0;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h)) {
                        if (h.id == 1 && h.wt == 0) iid = h.v;
                        if (h.id == 2) match = pb_is(&h, g.id == 2 ? "prof_sync" : "sync");
                    }
                    if (match && g.id == 2) s->sync_iid = iid;
                    if (match && g.id == 3) s->key_iid = iid;
                }
            } else if (f.id == 11 && f.wt == 2) {        /* a track event */
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {
                    if (g.id == 9 && g.wt == 0) type = g.v;
                    if (g.id == 10 && g.wt == 0) name_iid = g.v;
                    if (g.id != 4 || g.wt != 2) continue;
                    uint64_t k = 0, v = 0;
                    int has_v = 0;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h)) {
                        if (h.id == 1 && h.wt == 0) k = h.v;
                        if (h.id == 4 && h.wt == 0) { v = h.v; has_v = 1; }
                    }
                    if (has_v) { key = k; sync = (int64_t)v; }
                }
            } else if (f.id == 126 && f.wt == 2) {       /* trace attributes: rank, drops */
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {
                    if (g.id != 1 || g.wt != 2) continue;
                    size_t k = (size_t)(g.stop - g.start);  /* kept for the merged trace's */
                    t->attrs = xrealloc(t->attrs, t->nattrs + k);
                    memcpy(t->attrs + t->nattrs, g.start, k);
                    t->nattrs += k;
                    int rank = 0, dropped = 0, reason = 0, step = 0;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h)) {
                        if (h.id == 1) {
                            rank = pb_is(&h, "rank");
                            dropped = pb_is(&h, "prof_dropped_events");
                            reason = pb_is(&h, "prof_dump_reason");
                            step = pb_is(&h, "prof_dump_step");
                        }
                        if (h.id == 3 && reason) t->hang = pb_is(&h, "hang");
                        if (h.id == 2 && h.wt == 0 && step && (int64_t)h.v >= 0) t->dump_step = (int64_t)h.v;
                        if (h.id == 2 && h.wt == 0 && rank) {
                            if ((int64_t)h.v < 0 || (int64_t)h.v > PF_MAX_RANK)
                                die("%s: rank %" PRId64 ": prof merge numbers the ranks of Perfetto traces 0 to %d",
                                    t->path, (int64_t)h.v, PF_MAX_RANK);
                            t->rank = (int)h.v;
                        }
                        if (h.id == 2 && h.wt == 0 && dropped && (int64_t)h.v >= 0) t->dropped = (int64_t)h.v;
                    }
                }
            }
        }
        if (!pk.timed) continue;
        if (!t->timed || pk.abs_ns < t->tmin) t->tmin = pk.abs_ns;
        t->timed = 1;
        t->npackets++;
        if (type == 3 && name_iid && name_iid == s->sync_iid && key && key == s->key_iid && sync >= 0) {
            t->syncs = xrealloc(t->syncs, (t->nsync + 1) * sizeof *t->syncs);
            t->syncs[t->nsync] = (sync_pt){ sync, pk.abs_ns, t->nsync };
            t->nsync++;
        }
    }
    pf_start();                         /* the next trace's sequences are others */
    trace_close(t);
}

/* ---- prof table's reading: the model ------------------------------------
   A Perfetto trace's CPU regions are the BEGIN/END slices of thread tracks (a thread's own,
   or an overlap lane under it), paired per track as the trace processor
   pairs them, with the names and argument keys each sequence interned and
   the arguments on the END, as prof.h writes them. GPU, counter and memory
   tracks are left out, as the JSON path leaves GPU events out; prof report
   reads them from the same pass, and prof ranks its regions without a
   model (pf_to_model's also: every slice, with its BEGIN's arguments when
   its END has none, as a GPU slice's, and every instant). Per thread:
   prof ranks reads several traces at once. */
typedef struct { uint64_t uuid, parent; int64_t tid; int has_tid; const char *name; } pftrack;
typedef struct { uint64_t track; const char *name; uint64_t t0; size_t a0, na; } pfopen;   /* a0, na: its BEGIN's args */

static _Thread_local struct {
    void (*also)(trace *, const pf_slice *, void *);   /* the other reader of the pass; NULL: none */
    void *ctx;
    trace *t;
    uint64_t *key;                      /* (sequence, table, iid) + 1; 0: empty */
    const char **val;
    size_t cap, n;
    pftrack *tr;
    size_t ntr;
    pfopen *open;
    size_t nopen, opencap;
    pf_arg *args;                       /* the open slices' BEGIN arguments (GPU slices carry them there) */
    size_t nargs, argcap;
} g_pfm;

static void pfm_free(void) {
    free(g_pfm.key);
    free(g_pfm.val);
    free(g_pfm.tr);
    free(g_pfm.open);
    free(g_pfm.args);
    memset(&g_pfm, 0, sizeof g_pfm);
}

static uint64_t pfm_key(uint32_t seq, unsigned table, uint64_t iid) {
    return ((uint64_t)seq << 32 | (uint64_t)table << 30 | (iid & 0x3FFFFFFFu)) + 1;
}

static size_t pfm_slot(uint64_t key) {
    size_t j = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (g_pfm.cap - 1);
    while (g_pfm.key[j] && g_pfm.key[j] != key) j = (j + 1) & (g_pfm.cap - 1);
    return j;
}

static void pfm_name_put(uint64_t key, const char *v) {
    if (2 * (g_pfm.n + 1) > g_pfm.cap) {        /* grow: rehash into twice the room */
        uint64_t *ok = g_pfm.key;
        const char **ov = g_pfm.val;
        size_t oc = g_pfm.cap;
        g_pfm.cap = oc ? 2 * oc : 1024;
        g_pfm.key = xrealloc(NULL, g_pfm.cap * sizeof *g_pfm.key);
        g_pfm.val = xrealloc(NULL, g_pfm.cap * sizeof *g_pfm.val);
        memset(g_pfm.key, 0, g_pfm.cap * sizeof *g_pfm.key);
        for (size_t i = 0; i < oc; i++)
            if (ok[i]) {
                size_t j = pfm_slot(ok[i]);
                g_pfm.key[j] = ok[i];
                g_pfm.val[j] = ov[i];
            }
        free(ok);
        free(ov);
    }
    size_t j = pfm_slot(key);
    if (!g_pfm.key[j]) g_pfm.n++;
    g_pfm.key[j] = key;
    g_pfm.val[j] = v;
}

static const char *pfm_name(uint64_t key) {
    if (!g_pfm.cap) return NULL;
    size_t j = pfm_slot(key);
    return g_pfm.key[j] ? g_pfm.val[j] : NULL;
}

static const char *pf_str(const pbfield *f) { return prof_intern((const char *)f->data, f->n); }

static pftrack *pfm_track(uint64_t uuid) {
    for (size_t i = 0; i < g_pfm.ntr; i++)
        if (g_pfm.tr[i].uuid == uuid) return &g_pfm.tr[i];
    return NULL;
}

/* The thread a track's slices belong to: its own, or its parent's (lanes). */
static int pfm_tid(uint64_t uuid, int64_t *tid) {
    for (int depth = 0; depth < 4; depth++) {
        const pftrack *k = pfm_track(uuid);
        if (!k) return 0;
        if (k->has_tid) { *tid = k->tid; return 1; }
        uuid = k->parent;
    }
    return 0;
}

/* A track descriptor: its uuid, parent, and thread (with its name). */
static void pfm_desc(prof_cycle *c, const pbfield *f) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    pftrack k = { 0, 0, 0, 0, NULL };
    const char *tname = NULL;
    while (pb_next(&in, &g)) {
        if (g.id == 1 && g.wt == 0) k.uuid = g.v;
        if (g.id == 2 && g.wt == 2) k.name = pf_str(&g);     /* a counter track's: "tokens" */
        if (g.id == 5 && g.wt == 0) k.parent = g.v;
        if (g.id != 4 || g.wt != 2) continue;   /* ThreadDescriptor */
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (h.id == 2 && h.wt == 0) { k.tid = (int64_t)(int32_t)h.v; k.has_tid = 1; }
            if (h.id == 5 && h.wt == 2) tname = pf_str(&h);
        }
    }
    pftrack *o = pfm_track(k.uuid);
    if (!o) {
        g_pfm.tr = xrealloc(g_pfm.tr, (g_pfm.ntr + 1) * sizeof *g_pfm.tr);
        o = &g_pfm.tr[g_pfm.ntr++];
    }
    *o = k;
    if (k.has_tid && tname && c) prof_model_thread(c, (long)k.tid, tname);
}

/* Interned event names (table 2) and argument keys (table 3) of a sequence. */
static void pfm_interned(uint32_t seq, const pbfield *f) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    while (pb_next(&in, &g)) {
        if ((g.id != 2 && g.id != 3) || g.wt != 2) continue;
        uint64_t iid = 0;
        const char *name = NULL;
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (h.id == 1 && h.wt == 0) iid = h.v;
            if (h.id == 2 && h.wt == 2) name = pf_str(&h);
        }
        if (name) pfm_name_put(pfm_key(seq, (unsigned)g.id, iid), name);
    }
}

static int prof_key(const char *key) {         /* prof.h's own keys are not a region's arguments */
    return !strcmp(key, "correlation") || !strcmp(key, "os_tid") || !strcmp(key, "clipped");
}

/* A slice's integer argument k; dflt if it has none. */
static int64_t pf_int(const pf_slice *sl, const char *k, int64_t dflt) {
    for (size_t i = 0; i < sl->nargs; i++)
        if (!sl->args[i].is_str && !strcmp(sl->args[i].key, k)) return sl->args[i].v;
    return dflt;
}

static int pf_has_arg(const pf_slice *sl, const char *k) {
    for (size_t i = 0; i < sl->nargs; i++)
        if (!strcmp(sl->args[i].key, k)) return 1;
    return 0;
}

/* A slice's GPU record, as prof.h writes them, into the model: a runtime
   call (a "cbid") on a thread's track; off the threads' tracks a kernel (a
   "grid"), fill ("Memset ..."), copy ("bytes"), synchronisation (a
   "cuda_sync_kind") or GPU region's GPU side (only a "correlation"). 0: not
   one. */
static int pfm_gpu(prof_cycle *c, const pf_slice *sl) {
    int64_t corr = pf_int(sl, "correlation", -1);
    int runtime = sl->has_tid && pf_has_arg(sl, "cbid");
    int sync = !sl->has_tid && pf_has_arg(sl, "cuda_sync_kind");
    if (sl->has_tid && !runtime) return 0;
    if (corr < 0 || corr > UINT32_MAX) return 1;
    if (!runtime && !sync && !pf_has_arg(sl, "grid") && strncmp(sl->name, "Memset", 6) && !pf_has_arg(sl, "bytes")) {
        prof_gpu_event g = { sl->name, (int)pf_int(sl, "device", 0), pf_int(sl, "stream", 0), (uint32_t)corr,
                             sl->t0, sl->t1 - sl->t0 };
        prof_model_gpu(c, &g);
        return 1;
    }
    prof_gpu_activity a;
    memset(&a, 0, sizeof a);
    a.kind = runtime ? PROF_GPU_RUNTIME : sync ? PROF_GPU_SYNC : pf_has_arg(sl, "grid") ? PROF_GPU_KERNEL
           : !strncmp(sl->name, "Memset", 6) ? PROF_GPU_MEMSET : PROF_GPU_MEMCPY;
    a.name = sl->name;
    a.device = runtime ? -1 : (int)pf_int(sl, "device", 0);
    a.stream = runtime ? 0 : pf_int(sl, "stream", 0);
    if (sync) {
        a.sync = sync_kind(sl->name);
        a.event = pf_int(sl, "wait_on_cuda_event_id", -1);
        a.wait_stream = pf_int(sl, "wait_on_stream", -1);
        a.wait_corr = pf_int(sl, "wait_on_cuda_event_record_corr_id", -1);
    }
    a.correlation = (uint32_t)corr;
    a.t0_ns = sl->t0;
    a.t1_ns = sl->t1;
    a.thread = (uint64_t)sl->tid;
    prof_model_activity(c, &a);
    return 1;
}

/* One TrackEvent of sequence s at time ts (ns since the trace's earliest);
   c NULL: to also only. */
static void pfm_event(prof_cycle *c, pfseq *s, const pbfield *f, uint64_t ts) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    uint64_t type = 0, track = s->track, name_iid = 0;
    const char *name = NULL;
    double cv = 0;
    size_t nargs = 0;
    pf_arg args[PF_ARGS];
    while (pb_next(&in, &g)) {
        if (g.id == 9 && g.wt == 0) type = g.v;
        if (g.id == 10 && g.wt == 0) name_iid = g.v;
        if (g.id == 23 && g.wt == 2) name = pf_str(&g);
        if (g.id == 11 && g.wt == 0) track = g.v;
        if (g.id == 30 && g.wt == 0) cv = (double)(int64_t)g.v;      /* counter_value */
        if (g.id == 44 && g.wt == 1) memcpy(&cv, &g.v, sizeof cv);    /* double_counter_value */
        if (g.id != 4 || g.wt != 2 || nargs == PF_ARGS) continue;
        const char *key = NULL;
        int has = 0;
        args[nargs].is_dbl = 0;
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (h.id == 1 && h.wt == 0) key = pfm_name(pfm_key(s->id, 3, h.v));
            if (h.id == 10 && h.wt == 2) key = pf_str(&h);
            if (h.id == 4 && h.wt == 0) { args[nargs].is_str = 0; args[nargs].v = (int64_t)h.v; has = 1; }
            if (h.id == 5 && h.wt == 1) {     /* double_value: PROF_ENERGY's joules */
                double d;
                memcpy(&d, &h.v, sizeof d);
                args[nargs].is_str = 0;
                args[nargs].is_dbl = 1;
                args[nargs].d = d;
                args[nargs].v = (int64_t)d;
                has = 1;
            }
            if (h.id == 6 && h.wt == 2) { args[nargs].is_str = 1; args[nargs].str = pf_str(&h); has = 1; }
        }
        if (key && has) args[nargs++].key = key;
    }
    if (!name && name_iid) name = pfm_name(pfm_key(s->id, 2, name_iid));
    if (type == 4 && c) {                       /* COUNTER: tokens and samples, for J/token */
        const pftrack *k = pfm_track(track);
        if (k && k->name) prof_model_count(c, k->name, (int64_t)ts, cv);
        return;
    }
    if (type == 3 && g_pfm.also) {              /* INSTANT */
        pf_slice sl = { name ? name : "(unnamed)", (int64_t)ts, (int64_t)ts, 1, 0, 0, nargs, args };
        sl.has_tid = pfm_tid(track, &sl.tid);
        g_pfm.also(g_pfm.t, &sl, g_pfm.ctx);
        return;
    }
    if (type == 1) {                            /* SLICE_BEGIN */
        if (g_pfm.nopen == g_pfm.opencap) {
            g_pfm.opencap = g_pfm.opencap ? 2 * g_pfm.opencap : 64;
            g_pfm.open = xrealloc(g_pfm.open, g_pfm.opencap * sizeof *g_pfm.open);
        }
        size_t a0 = g_pfm.nargs;
        if ((g_pfm.also || c) && nargs) {              /* kept for the END, which has none */
            if (g_pfm.nargs + nargs > g_pfm.argcap) {
                g_pfm.argcap = 2 * (g_pfm.nargs + nargs);
                g_pfm.args = xrealloc(g_pfm.args, g_pfm.argcap * sizeof *g_pfm.args);
            }
            memcpy(g_pfm.args + a0, args, nargs * sizeof *args);
            g_pfm.nargs += nargs;
        }
        g_pfm.open[g_pfm.nopen++] = (pfopen){ track, name ? name : "(unnamed)", ts, a0, g_pfm.nargs - a0 };
        return;
    }
    if (type != 2) return;                      /* SLICE_END: the track's last open slice */
    size_t i = g_pfm.nopen;
    while (i && g_pfm.open[i - 1].track != track) i--;
    if (!i) return;
    pfopen o = g_pfm.open[i - 1];
    memmove(&g_pfm.open[i - 1], &g_pfm.open[i], (g_pfm.nopen - i) * sizeof *g_pfm.open);
    g_pfm.nopen--;
    int64_t tid;
    int has_tid = pfm_tid(track, &tid);
    pf_slice sl = { o.name, (int64_t)o.t0, (int64_t)ts, 0, has_tid, has_tid ? tid : 0, nargs, args };
    if (!nargs && o.na) sl.nargs = o.na, sl.args = g_pfm.args + o.a0;
    if (g_pfm.also) g_pfm.also(g_pfm.t, &sl, g_pfm.ctx);
    int gpu = c && pfm_gpu(c, &sl);
    if (!g_pfm.nopen) g_pfm.nargs = 0;         /* none open: the pool starts again */
    if (!has_tid || !c || gpu) return;          /* not a thread's (GPU, counters), or no model */
    int th = prof_model_thread(c, (long)tid, NULL);
    if (!strncmp(o.name, "ProfilerStep#", 13)) {    /* whole here, unlike the JSON's */
        prof_model_step(c, th, (int64_t)strtoul(o.name + 13, NULL, 10), (int64_t)o.t0, (int64_t)ts);
        int share = 0, dev;                     /* PROF_ENERGY: its joules per GPU */
        char tail;
        for (size_t k = 0; k < sl.nargs; k++)
            share |= sl.args[k].is_str && !strcmp(sl.args[k].key, "energy");
        for (size_t k = 0; k < sl.nargs; k++)
            if (sl.args[k].is_dbl && sscanf(sl.args[k].key, "GPU %d energy (J%c", &dev, &tail) == 2 && tail == ')')
                prof_model_step_energy(c, dev, sl.args[k].d, share);
        return;
    }
    int64_t corr = pf_int(&sl, "correlation", 0);
    if (corr > 0 && corr <= UINT32_MAX) prof_model_gpu_region(c, th, o.name, (uint32_t)corr, (int64_t)o.t0, (int64_t)ts);
    else prof_model_region(c, th, o.name, (int64_t)o.t0, (int64_t)ts);
    for (size_t k = 0; k < nargs; k++) {
        if (prof_key(args[k].key)) continue;
        if (args[k].is_str) prof_model_arg_str(c, args[k].key, args[k].str);
        else prof_model_arg_int(c, args[k].key, args[k].v);
    }
}

void pf_to_model(trace *t, prof_cycle *c, void (*also)(trace *, const pf_slice *, void *), void *ctx) {
    pfpacket pk;
    trace_rewind(t);
    g_pfm.also = also;
    g_pfm.ctx = ctx;
    g_pfm.t = t;
    pf_start();
    while (pf_read(t, &pk)) {
        pbin in = { pk.at, pk.at + pk.n };
        pbfield f, ev;
        memset(&ev, 0, sizeof ev);
        while (pb_next(&in, &f)) {
            if (f.id == 60 && f.wt == 2) pfm_desc(c, &f);
            else if (f.id == 12 && f.wt == 2) pfm_interned(pk.seq, &f);
            else if (f.id == 11 && f.wt == 2) ev = f;
        }
        if (pk.timed && pk.abs_ns >= t->tmin) pfm_event(c, pk.s, &ev, (uint64_t)(pk.abs_ns - t->tmin));
    }
    pf_start();
    pfm_free();
    trace_close(t);
}

void pf_free(void) {
    free(g_pfseq);
    g_pfseq = NULL;
    g_npfseq = 0;
    pfm_free();
}
