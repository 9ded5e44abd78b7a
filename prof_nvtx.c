/* prof_nvtx.c - libprof_nvtx.so: prof.h as the NVTX tool. Loaded by NVTX3
   from NVTX_INJECTION64_PATH (as Nsight Systems loads itself; `prof run`
   sets it), it receives every NVTX range, mark and thread name of every
   library in the process (NCCL's collectives with their sizes, cuDF's,
   TensorRT's, an engine's own) and records them into the process's prof.h,
   on the thread that made them, nested in the regions around them.

   Build: the CMake target prof_nvtx, or by hand from the repository root:
     cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -I. -I/usr/local/cuda/include \
        -o libprof_nvtx.so prof_nvtx.c tools/impl_private.c -lpthread -ldl
   (its copy of prof.h is tools/impl_private.c's, which the prof tool links too)
   (NVTX3's headers only: the CUDA toolkit's include/nvtx3, or NVIDIA/NVTX.)

   WHICH RECORDER. Every copy of prof.h's implementation carries an ELF
   note that leads to its table of entry points (prof.h, >>process,
   TOOLS); the first found among the loaded objects (the executable first)
   is the program's, and NVTX's events go there, into the same per-thread
   chunks, schedule, flight ring, triggers and ranks as its regions. With
   none (a program without prof.h, or only -DPROF_PRIVATE copies) the
   library's own copy of prof.h records them and writes the trace as any
   program's (PROF_OUTPUT...), so `prof run` works on anything. The choice
   is made at the first NVTX call and kept; a library holding the chosen
   copy is kept loaded (RTLD_NODELETE), as NVTX calls may follow its
   dlclose.

   WHAT IS KEPT
     push/pop ranges   a region on their thread, from push to pop
     start/end ranges  a region on the thread that ends it, from its start;
                       one started on another thread says which (args
                       "started on thread")
     marks             instants, named by their message
     args              "domain" (the domain's name, "(default)" for the
                       default domain), "category" (its name, or number),
                       "payload" (an int or float payload), and each field
                       of a payload extension's schema by its name (enums
                       by their names: NCCL's reduction op)
     thread names      nvtxNameOsThread, for threads prof.h has seen
   Names and registered strings are interned once (prof_intern). Ranges of
   the domain "prof" are prof.h's own regions forwarded (-DPROF_NVTX): left
   alone. What cannot be kept is counted and said in one line at exit:
   ranges deeper than PROF_NVTX_DEPTH, pops and ends with nothing to close,
   payloads with no schema registered or fields not decodable (pointers,
   arrays, strings, nested schemas), arguments past PROF_NVTX_ARGS.

   COST. Outside a recording window a call reads prof.h's recording flag
   and keeps its thread's depth (bench/nvtx.md). Inside, a range is one
   region record, plus one per argument. */
#define _GNU_SOURCE                     /* dl_iterate_phdr, dladdr, realpath */
#include "tools/impl_private.h"      /* our copy, private: used only when the program has none;
                                           general-dynamic TLS for a dlopen()ed library; prof__tool */

#define NVTX_NO_IMPL                    /* the types; the tool implements the calls */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <dlfcn.h>
#include <link.h>
#include <wchar.h>

#define PROF_NVTX_DEPTH   64            /* open push/pop ranges kept per thread */
#define PROF_NVTX_ARGS    12            /* arguments kept per range */
#define PROF_NVTX_OPEN    4096          /* start/end ranges open at once */
#define PROF_NVTX_DOMAINS 256
#define PROF_NVTX_CATS    64            /* named categories per domain */
#define PROF_NVTX_SCHEMAS 256
#define PROF_NVTX_FIELDS  32            /* fields per schema */
#define PROF_NVTX_ENUMS   64
#define PROF_NVTX_BLOCK   1024          /* registered strings: blocks of this many */
#define PROF_NVTX_BLOCKS  1024

static const prof__tool *pn_api;        /* the recorder: the program's, or our own */
static pthread_mutex_t pn_lock = PTHREAD_MUTEX_INITIALIZER;

/* What was not kept, said at exit. */
static struct {
    uint64_t ranges, marks;             /* kept */
    uint64_t too_deep, unmatched_pops, unknown_ends, open_full, undecoded, fields, args, unnamed;
    int64_t open;                       /* recorded ranges begun and not ended yet */
} pn_n;
#define PN_COUNT(field) __atomic_fetch_add(&pn_n.field, 1, __ATOMIC_RELAXED)

/* ---- the recorder: found by prof.h's note ---------------------------------- */

static const char *pn_where;            /* the object holding the recorder ("": the executable) */

static int pn_note(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const prof__tool **found = (const prof__tool **)data;
    for (int i = 0; i < info->dlpi_phnum && !*found; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *base = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        size_t at = 0, len = ph->p_memsz;
        while (len - at >= 12) {        /* each note: namesz, descsz, type, name, desc (4-aligned) */
            uint32_t namesz, descsz, type;
            memcpy(&namesz, base + at, 4);
            memcpy(&descsz, base + at + 4, 4);
            memcpy(&type, base + at + 8, 4);
            size_t name = at + 12, desc = name + (((size_t)namesz + 3) & ~(size_t)3);
            if (desc > len || len - desc < descsz) break;
            if (type == 1 && namesz == 7 && descsz == 8 && !memcmp(base + name, "prof.h", 7)) {
                int64_t off;
                memcpy(&off, base + desc, 8);
                const prof__tool *t = (const prof__tool *)(const void *)(base + desc + off);
                if (t->magic == PROF__TOOL_MAGIC && t->version >= 1 && t->size >= sizeof(prof__tool)) {
                    *found = t;
                    pn_where = info->dlpi_name;
                    break;
                }
            }
            at = desc + (((size_t)descsz + 3) & ~(size_t)3);
        }
    }
    return *found != NULL;
}

static int pn_own;                      /* 1: our own copy records */
static long pn_pid;                     /* the process that chose: a forked child says nothing at exit */
static void pn_said(void);
static pthread_key_t pn_key;            /* frees a thread's frames at its exit */
static int pn_key_made;
static void pn_thread_exit(void *f);

/* A fork happens with the library's lock free in the parent and held by
   no one in the child: a child never waits for a thread it does not have. */
static void pn_fork_prepare(void) { pthread_mutex_lock(&pn_lock); }
static void pn_fork_done(void) { pthread_mutex_unlock(&pn_lock); }

static void pn_choose(void) {
    const prof__tool *t = NULL;
    dl_iterate_phdr(pn_note, &t);
    pn_own = t == NULL;
    pn_pid = (long)getpid();
    /* a library's copy (a plugin, a Python extension) must outlive its
       dlclose(): NVTX calls may come after it. It stays loaded (its trace is
       then written at exit, not at the dlclose). */
    if (t && pn_where && *pn_where) (void)dlopen(pn_where, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    pn_key_made = pthread_key_create(&pn_key, pn_thread_exit) == 0;
    pthread_atfork(pn_fork_prepare, pn_fork_done, pn_fork_done);
    __atomic_store_n(&pn_api, t ? t : &prof__tool_table, __ATOMIC_RELEASE);
    atexit(pn_said);
}

static pthread_once_t pn_once = PTHREAD_ONCE_INIT;
static inline const prof__tool *pn(void) {
    const prof__tool *t = __atomic_load_n(&pn_api, __ATOMIC_ACQUIRE);
    if (PROF__UNLIKELY(!t)) {
        pthread_once(&pn_once, pn_choose);
        t = __atomic_load_n(&pn_api, __ATOMIC_ACQUIRE);
    }
    return t;
}

static inline int pn_recording(const prof__tool *t) { return __atomic_load_n(t->on, __ATOMIC_RELAXED) != 0; }

static void pn_said(void) {
    const prof__tool *t = pn_api;
    if ((long)getpid() != pn_pid) return;   /* a forked child: its counts are the parent's */
    char line[512];
    int k = snprintf(line, sizeof line, "nvtx: %llu ranges and %llu marks recorded (libprof_nvtx, into %s)",
                     (unsigned long long)__atomic_load_n(&pn_n.ranges, __ATOMIC_RELAXED),
                     (unsigned long long)__atomic_load_n(&pn_n.marks, __ATOMIC_RELAXED),
                     pn_own ? "its own recorder: the program has no prof.h" : "the program's prof.h");
    static const char *const what[] = { "ranges still open at exit (or when their thread ended)",
                                        "deeper than 64 on their thread", "pops with no range open",
                                        "ends of no range open", "start/end ranges past 4096 open",
                                        "payloads with no schema registered", "payload fields not decodable",
                                        "arguments past 12 per range", "thread names of threads prof.h had not seen" };
#define PN_GET(field) __atomic_load_n(&pn_n.field, __ATOMIC_RELAXED)
    int64_t open = PN_GET(open);
    const uint64_t n[] = { open > 0 ? (uint64_t)open : 0, PN_GET(too_deep), PN_GET(unmatched_pops), PN_GET(unknown_ends), PN_GET(open_full),
                           PN_GET(undecoded), PN_GET(fields), PN_GET(args), PN_GET(unnamed) };
    const char *sep = "; not kept: ";
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        if (n[i] && k > 0 && (size_t)k < sizeof line) {
            k += snprintf(line + k, sizeof line - (size_t)k, "%s%llu %s", sep, (unsigned long long)n[i], what[i]);
            sep = ", ";
        }
    if (t) t->say(line);
}

/* ---- names: text, wide text, registered strings --------------------------- */

static const char *pn_intern(const prof__tool *t, const char *s) { return s ? t->intern(s, strlen(s)) : "(null)"; }

/* Wide text (UTF-32 on Linux) as UTF-8, interned whole. */
static const char *pn_intern_w(const prof__tool *t, const wchar_t *w) {
    char small[256] = "", *buf = small;
    size_t o = 0, n;
    if (!w) return "(null)";
    for (n = 0; w[n]; n++) {}
    if (4 * n > sizeof small && !(buf = (char *)calloc(4 * n, 1))) return "(out of memory)";
    for (; *w; w++) {
        uint32_t c = (uint32_t)*w;
        if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd;
        if (c < 0x80) buf[o++] = (char)c;
        else if (c < 0x800) buf[o++] = (char)(0xc0 | c >> 6), buf[o++] = (char)(0x80 | (c & 63));
        else if (c < 0x10000)
            buf[o++] = (char)(0xe0 | c >> 12), buf[o++] = (char)(0x80 | ((c >> 6) & 63)), buf[o++] = (char)(0x80 | (c & 63));
        else
            buf[o++] = (char)(0xf0 | c >> 18), buf[o++] = (char)(0x80 | ((c >> 12) & 63)),
            buf[o++] = (char)(0x80 | ((c >> 6) & 63)), buf[o++] = (char)(0x80 | (c & 63));
    }
    const char *r = t->intern(buf, o);
    if (buf != small) free(buf);
    return r;
}

/* A registered string's handle is its index + 1 into blocks that never
   move, so that any thread reads it without a lock, and a handle that is
   not one (misuse) is told apart. */
static const char **pn_str[PROF_NVTX_BLOCKS];
static size_t pn_nstr;                  /* atomic; under pn_lock to add */

static nvtxStringHandle_t pn_register(const char *s) {
    pthread_mutex_lock(&pn_lock);
    size_t i = pn_nstr;
    nvtxStringHandle_t h = NULL;
    if (i < (size_t)PROF_NVTX_BLOCK * PROF_NVTX_BLOCKS &&
        (pn_str[i / PROF_NVTX_BLOCK] || (pn_str[i / PROF_NVTX_BLOCK] = (const char **)calloc(PROF_NVTX_BLOCK, sizeof(char *))))) {
        pn_str[i / PROF_NVTX_BLOCK][i % PROF_NVTX_BLOCK] = s;
        __atomic_store_n(&pn_nstr, i + 1, __ATOMIC_RELEASE);
        h = (nvtxStringHandle_t)(uintptr_t)(i + 1);
    }
    pthread_mutex_unlock(&pn_lock);
    return h;
}

static const char *pn_registered(nvtxStringHandle_t h) {
    size_t i = (size_t)(uintptr_t)h;
    if (!i || i > __atomic_load_n(&pn_nstr, __ATOMIC_ACQUIRE)) return "(unknown registered string)";
    return pn_str[(i - 1) / PROF_NVTX_BLOCK][(i - 1) % PROF_NVTX_BLOCK];
}

/* ---- domains and their categories ------------------------------------------ */

typedef struct { uint32_t id; const char *name; } pn_cat;
typedef struct {
    const char *name;
    int ignore;                         /* "prof": prof.h's own regions, forwarded */
    pn_cat cat[PROF_NVTX_CATS];
    int ncat;                           /* atomic */
} pn_domain;
static pn_domain pn_dom[PROF_NVTX_DOMAINS] = { { "(default)", 0, { { 0, NULL } }, 0 } };  /* [0]: the default domain */
static int pn_ndom = 1;                 /* atomic */

static pn_domain *pn_domain_of(nvtxDomainHandle_t d) {
    size_t i = (size_t)(uintptr_t)d;
    if (i >= (size_t)__atomic_load_n(&pn_ndom, __ATOMIC_ACQUIRE)) return NULL;   /* not one of ours */
    return &pn_dom[i];
}

static nvtxDomainHandle_t pn_domain_create(const char *name) {
    pthread_mutex_lock(&pn_lock);
    int i = 1, n = pn_ndom;
    while (i < n && strcmp(pn_dom[i].name, name)) i++;
    if (i == n && n < PROF_NVTX_DOMAINS) {
        pn_dom[i].name = name;
        pn_dom[i].ignore = !strcmp(name, "prof");
        __atomic_store_n(&pn_ndom, n + 1, __ATOMIC_RELEASE);
    } else if (i == n) {
        i = 0;                          /* past 256 domains: the default one's name */
    }
    pthread_mutex_unlock(&pn_lock);
    return (nvtxDomainHandle_t)(uintptr_t)i;
}

static void pn_name_category(pn_domain *d, uint32_t id, const char *name) {
    if (!d) return;
    pthread_mutex_lock(&pn_lock);
    int i = 0, n = d->ncat;
    while (i < n && d->cat[i].id != id) i++;
    if (i < PROF_NVTX_CATS) {
        d->cat[i].id = id;
        __atomic_store_n(&d->cat[i].name, name, __ATOMIC_RELEASE);
        if (i == n) __atomic_store_n(&d->ncat, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&pn_lock);
}

static const char *pn_category(const pn_domain *d, uint32_t id) {
    int n = __atomic_load_n(&d->ncat, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (d->cat[i].id == id) return __atomic_load_n(&d->cat[i].name, __ATOMIC_ACQUIRE);
    return NULL;
}

/* ---- payload schemas and enums (the payload extension) --------------------- */

typedef struct { const char *name; uint64_t type, flags, offset; } pn_field;
typedef struct {
    const pn_domain *dom;
    uint64_t id;
    const char *name;
    size_t nfield;
    pn_field field[PROF_NVTX_FIELDS];
    int partial;                        /* fields past PROF_NVTX_FIELDS, or of a kind not read */
} pn_schema;
typedef struct {
    const pn_domain *dom;
    uint64_t id;
    size_t size, n;
    uint64_t *value;
    const char **name;
} pn_enum;
static pn_schema pn_sch[PROF_NVTX_SCHEMAS];
static size_t pn_nsch;                  /* under pn_lock */
static pn_enum pn_en[PROF_NVTX_ENUMS];
static size_t pn_nen;
static uint64_t pn_next_id = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START;

/* The size of a scalar field, 0 for a kind not read. */
static size_t pn_scalar_size(uint64_t type) {
    switch (type) {
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR: case NVTX_PAYLOAD_ENTRY_TYPE_UCHAR: case NVTX_PAYLOAD_ENTRY_TYPE_INT8:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT8: case NVTX_PAYLOAD_ENTRY_TYPE_BYTE: return 1;
    case NVTX_PAYLOAD_ENTRY_TYPE_SHORT: case NVTX_PAYLOAD_ENTRY_TYPE_USHORT: case NVTX_PAYLOAD_ENTRY_TYPE_INT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT16: return 2;
    case NVTX_PAYLOAD_ENTRY_TYPE_INT: case NVTX_PAYLOAD_ENTRY_TYPE_UINT: case NVTX_PAYLOAD_ENTRY_TYPE_INT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT32: case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT: case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_CATEGORY: case NVTX_PAYLOAD_ENTRY_TYPE_COLOR_ARGB:
    case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT32: case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT32: return 4;
    case NVTX_PAYLOAD_ENTRY_TYPE_LONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONG: return sizeof(long);
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG: case NVTX_PAYLOAD_ENTRY_TYPE_INT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_UINT64: case NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE: case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_SIZE: case NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS: case NVTX_PAYLOAD_ENTRY_TYPE_SCOPE_ID:
    case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT64: case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_NVTX_REGISTERED_STRING_HANDLE: return 8;
    default: return 0;
    }
}

static const pn_enum *pn_enum_of(const pn_domain *d, uint64_t id) {
    for (size_t i = 0; i < pn_nen; i++)
        if (pn_en[i].id == id && pn_en[i].dom == d) return &pn_en[i];
    return NULL;
}

static uint64_t pn_schema_register(nvtxDomainHandle_t dh, const nvtxPayloadSchemaAttr_t *a) {
    const prof__tool *t = pn();
    pn_domain *d = pn_domain_of(dh);
    if (!a || !d) return 0;
    uint64_t mask = a->fieldMask;
    if (!(mask & (1u << 4)) || !(mask & (1u << 5)) || !a->entries) return 0;   /* no entries */
    pthread_mutex_lock(&pn_lock);
    uint64_t id = 0;
    if (pn_nsch < PROF_NVTX_SCHEMAS) {
        pn_schema *s = &pn_sch[pn_nsch];
        memset(s, 0, sizeof *s);
        s->dom = d;
        s->id = (mask & (1u << 8)) ? a->schemaId : pn_next_id++;
        s->name = (mask & (1u << 1)) && a->name ? pn_intern(t, a->name) : NULL;
        /* a static layout only: a dynamic schema's or a union's fields lie where
           their data says, not read here (counted) */
        if ((mask & (1u << 2)) && a->type != NVTX_PAYLOAD_SCHEMA_TYPE_STATIC) s->partial = 1;
        for (size_t i = 0; i < a->numEntries && !s->partial; i++) {
            const nvtxPayloadSchemaEntry_t *e = &a->entries[i];
            if (s->nfield == PROF_NVTX_FIELDS) {
                s->partial = 1;
                break;
            }
            char def[32];
            snprintf(def, sizeof def, "field%zu", i);
            pn_field *f = &s->field[s->nfield++];
            f->name = pn_intern(t, e->name ? e->name : def);
            f->type = e->type;
            f->flags = e->flags;
            f->offset = e->offset;
            if (!e->offset && i > 0) {  /* natural alignment after the field before */
                const pn_field *p = &s->field[s->nfield - 2];
                size_t ps = pn_scalar_size(p->type), sz = pn_scalar_size(e->type);
                if (!ps || !sz || (p->flags & ~(uint64_t)NVTX_PAYLOAD_ENTRY_FLAG_HIDE)) {
                    s->partial = 1;     /* where it lies is not known: it and the rest unread */
                    s->nfield--;
                    break;
                }
                f->offset = (p->offset + ps + sz - 1) / sz * sz;
            }
        }
        id = s->id;
        pn_nsch++;
    }
    pthread_mutex_unlock(&pn_lock);
    return id;
}

static uint64_t pn_enum_register(nvtxDomainHandle_t dh, const nvtxPayloadEnumAttr_t *a) {
    const prof__tool *t = pn();
    pn_domain *d = pn_domain_of(dh);
    if (!a || !d || !(a->fieldMask & (1u << 2)) || !(a->fieldMask & (1u << 3)) || !a->entries) return 0;
    pthread_mutex_lock(&pn_lock);
    uint64_t id = 0;
    if (pn_nen < PROF_NVTX_ENUMS) {
        pn_enum *e = &pn_en[pn_nen];
        e->dom = d;
        e->id = (a->fieldMask & (1u << 5)) ? a->schemaId : pn_next_id++;
        e->size = (a->fieldMask & (1u << 4)) && a->sizeOfEnum && a->sizeOfEnum <= 8 ? a->sizeOfEnum : sizeof(int);
        e->value = (uint64_t *)calloc(a->numEntries + 1, sizeof *e->value);
        e->name = (const char **)calloc(a->numEntries + 1, sizeof *e->name);
        if (e->value && e->name) {
            for (size_t i = 0; i < a->numEntries; i++) {
                e->value[i] = a->entries[i].value;
                e->name[i] = pn_intern(t, a->entries[i].name);
            }
            e->n = a->numEntries;
            id = e->id;
            pn_nen++;
        } else {
            free(e->value);
            free(e->name);
        }
    }
    pthread_mutex_unlock(&pn_lock);
    return id;
}

/* ---- a range's arguments, kept until it ends ---------------------------------- */

typedef struct { const char *key, *s; int64_t v; } pn_arg;     /* s: a string's, else v */
typedef struct {
    const char *name;
    uint64_t t0;                        /* 0: not recorded (outside a window) */
    const pn_domain *dom;
    long tid;                           /* who started it (start/end) */
    int nargs;
    pn_arg arg[PROF_NVTX_ARGS];
} pn_range;

static void pn_arg_int(pn_range *r, const char *key, int64_t v) {
    if (r->nargs == PROF_NVTX_ARGS) { PN_COUNT(args); return; }
    r->arg[r->nargs++] = (pn_arg){ key, NULL, v };
}
static void pn_arg_str(pn_range *r, const char *key, const char *s) {
    if (r->nargs == PROF_NVTX_ARGS) { PN_COUNT(args); return; }
    r->arg[r->nargs++] = (pn_arg){ key, s, 0 };
}

static void pn_arg_double(const prof__tool *t, pn_range *r, const char *key, double v) {
    char num[40];
    int n = snprintf(num, sizeof num, "%.17g", v);
    pn_arg_str(r, key, t->intern(num, (size_t)n));
}

/* One binary payload, as its schema says: each scalar field an argument. */
static void pn_decode(const prof__tool *t, pn_range *r, const pn_domain *d, const nvtxPayloadData_t *pd) {
    if (!pd || !pd->payload) return;
    pthread_mutex_lock(&pn_lock);
    const pn_schema *s = NULL;
    for (size_t i = 0; i < pn_nsch && !s; i++)
        if (pn_sch[i].id == pd->schemaId && pn_sch[i].dom == d) s = &pn_sch[i];
    for (size_t i = 0; i < pn_nsch && !s; i++)  /* registered in another domain */
        if (pn_sch[i].id == pd->schemaId) s = &pn_sch[i];
    if (!s) {
        pthread_mutex_unlock(&pn_lock);
        PN_COUNT(undecoded);
        return;
    }
    if (s->partial) PN_COUNT(fields);
    const unsigned char *p = (const unsigned char *)pd->payload;
    for (size_t i = 0; i < s->nfield; i++) {
        const pn_field *f = &s->field[i];
        if (f->flags & NVTX_PAYLOAD_ENTRY_FLAG_HIDE) continue;
        const pn_enum *en = f->type >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START ? pn_enum_of(s->dom, f->type) : NULL;
        size_t sz = en ? en->size : pn_scalar_size(f->type);
        if (!sz || f->flags || f->offset + sz > pd->size) {    /* pointers, arrays, strings, nested */
            PN_COUNT(fields);
            continue;
        }
        uint64_t u = 0;
        int64_t v;
        memcpy(&u, p + f->offset, sz);  /* little-endian: the low bytes */
        switch (f->type) {              /* signed kinds: sign-extended */
        case NVTX_PAYLOAD_ENTRY_TYPE_CHAR: case NVTX_PAYLOAD_ENTRY_TYPE_INT8: v = (int8_t)u; break;
        case NVTX_PAYLOAD_ENTRY_TYPE_SHORT: case NVTX_PAYLOAD_ENTRY_TYPE_INT16: v = (int16_t)u; break;
        case NVTX_PAYLOAD_ENTRY_TYPE_INT: case NVTX_PAYLOAD_ENTRY_TYPE_INT32: v = (int32_t)u; break;
        default: v = (int64_t)u;
        }
        if (en) {
            const char *name = NULL;
            if (sz < 8 && (u >> (8 * sz - 1) & 1)) u |= ~(uint64_t)0 << (8 * sz);     /* a negative enum */
            for (size_t k = 0; k < en->n && !name; k++)
                if (en->value[k] == u || (sz < 8 && (en->value[k] & ((1ull << (8 * sz)) - 1)) == (u & ((1ull << (8 * sz)) - 1))))
                    name = en->name[k];
            if (name) pn_arg_str(r, f->name, name);
            else pn_arg_int(r, f->name, v);
        } else if (f->type == NVTX_PAYLOAD_ENTRY_TYPE_FLOAT || f->type == NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32) {
            float x;
            memcpy(&x, p + f->offset, 4);
            pn_arg_double(t, r, f->name, x);
        } else if (f->type == NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE || f->type == NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64) {
            double x;
            memcpy(&x, p + f->offset, 8);
            pn_arg_double(t, r, f->name, x);
        } else if (f->type == NVTX_PAYLOAD_ENTRY_TYPE_NVTX_REGISTERED_STRING_HANDLE) {
            nvtxStringHandle_t h;
            memcpy(&h, p + f->offset, sizeof h);
            pn_arg_str(r, f->name, pn_registered(h));
        } else if (f->type == NVTX_PAYLOAD_ENTRY_TYPE_CATEGORY) {
            const char *c = pn_category(s->dom, (uint32_t)u);
            if (c) pn_arg_str(r, f->name, c);
            else pn_arg_int(r, f->name, v);
        } else {
            pn_arg_int(r, f->name, v);
        }
    }
    pthread_mutex_unlock(&pn_lock);
}

static void pn_payloads(const prof__tool *t, pn_range *r, const pn_domain *d, const nvtxPayloadData_t *pd, size_t n) {
    for (size_t i = 0; pd && i < n; i++) pn_decode(t, r, d, &pd[i]);
}

/* A range's name and arguments from its event attributes. */
static void pn_attrs(const prof__tool *t, pn_range *r, const pn_domain *d, const nvtxEventAttributes_t *a) {
    r->name = "(no message)";
    r->dom = d;
    r->nargs = 0;
    pn_arg_str(r, "domain", d->name);
    if (!a || a->version < 1 || a->size < 48) return;  /* NVTX 2's attributes: 48 bytes, up to the message */
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) r->name = pn_intern(t, a->message.ascii);
    else if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE) r->name = pn_intern_w(t, a->message.unicode);
    else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) r->name = pn_registered(a->message.registered);
    if (a->category) {
        const char *c = pn_category(d, a->category);
        if (c) pn_arg_str(r, "category", c);
        else pn_arg_int(r, "category", a->category);
    }
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: pn_arg_int(r, "payload", (int64_t)a->payload.ullValue); break;
    case NVTX_PAYLOAD_TYPE_INT64: pn_arg_int(r, "payload", a->payload.llValue); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: pn_arg_int(r, "payload", a->payload.uiValue); break;
    case NVTX_PAYLOAD_TYPE_INT32: pn_arg_int(r, "payload", a->payload.iValue); break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: pn_arg_double(t, r, "payload", a->payload.dValue); break;
    case NVTX_PAYLOAD_TYPE_FLOAT: pn_arg_double(t, r, "payload", a->payload.fValue); break;
    case NVTX_PAYLOAD_TYPE_EXT:         /* the payload extension: reserved0 of them */
        pn_payloads(t, r, d, (const nvtxPayloadData_t *)(uintptr_t)a->payload.ullValue,
                    a->reserved0 > 0 ? (size_t)a->reserved0 : 1);
        break;
    default: break;
    }
}

/* A range ends on this thread: its arguments, then the region (an argument
   belongs to the first region that closes after it on its thread). */
static void pn_emit(const prof__tool *t, const pn_range *r, long tid) {
    for (int i = 0; i < r->nargs; i++) {
        if (r->arg[i].s) t->arg_str(r->arg[i].key, r->arg[i].s);
        else t->arg_int(r->arg[i].key, r->arg[i].v);
    }
    if (r->tid && r->tid != tid) t->arg_int("started on thread", r->tid);
    t->region(r->name, r->t0, t->now());
    __atomic_fetch_add(&pn_n.ranges, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&pn_n.open, 1, __ATOMIC_RELAXED);
}

/* ---- push / pop: a stack per thread ------------------------------------------ */

/* A thread's open ranges: its depth in thread-local storage of the general
   model (never initial-exec: a library dlopen()ed late finds the static TLS
   glibc keeps for such libraries taken, by a plugin's prof.h for one, and
   would fail to load), its frames on the heap, made when it first records
   (freed when it exits). Outside a window a push or a pop only counts the
   depth. */
typedef struct {
    int depth;                          /* ranges open on this thread, kept or not */
    long tid;
    pn_range *frame;                    /* [PROF_NVTX_DEPTH], or NULL */
} pn_thread;
static __thread pn_thread pn_self;
static long pn_tid(void) {
    if (!pn_self.tid) pn_self.tid = (long)syscall(SYS_gettid);
    return pn_self.tid;
}

static pn_range *pn_frames(void) {
    if (PROF__LIKELY(pn_self.frame != NULL)) return pn_self.frame;
    pn_range *f = (pn_range *)calloc(PROF_NVTX_DEPTH, sizeof *f);
    if (f && pn_key_made) pthread_setspecific(pn_key, f);
    return pn_self.frame = f;
}

static void pn_thread_exit(void *f) {
    if (pn_self.frame == f) pn_self.frame = NULL;
    free(f);
}

/* push and pop: the inline part each callback has its own copy of, what
   outside a window costs; the rest out of line */
static __attribute__((noinline)) int pn_push_rec(const prof__tool *t, pn_domain *d, const nvtxEventAttributes_t *a,
                                                 const char *text, int k) {
    pn_range *fr;
    if (k >= PROF_NVTX_DEPTH || !(fr = pn_frames())) {
        PN_COUNT(too_deep);
        return k;
    }
    pn_range *r = &fr[k];
    pn_attrs(t, r, d, a);
    if (text) r->name = text;
    r->tid = 0;
    r->t0 = t->now();
    PN_COUNT(open);
    return k;
}

static inline __attribute__((always_inline)) int pn_push(pn_domain *d, const nvtxEventAttributes_t *a,
                                                         const char *text) {
    if (PROF__UNLIKELY(!d || d->ignore)) return -1;
    const prof__tool *t = pn();
    int k = pn_self.depth++;
    if (PROF__LIKELY(!pn_recording(t))) {
        pn_range *fr = pn_self.frame;
        if (fr && k < PROF_NVTX_DEPTH) fr[k].t0 = 0, fr[k].dom = d;
        return k;
    }
    return pn_push_rec(t, d, a, text, k);
}

static __attribute__((noinline)) int pn_pop_rec(pn_domain *d, const nvtxPayloadData_t *pd, size_t npd, int k);

/* The innermost range of domain d on this thread ends (NVTX keeps a stack
   per domain: of interleaved domains, each pops its own). */
static inline __attribute__((always_inline)) int pn_pop(pn_domain *d, const nvtxPayloadData_t *pd, size_t npd) {
    if (PROF__UNLIKELY(!d || d->ignore)) return -1;
    int k = pn_self.depth - 1;
    const pn_range *fr = pn_self.frame;
    if (PROF__LIKELY(k >= 0)) pn_self.depth = k;
    if (PROF__LIKELY(k >= 0 && (!fr || k >= PROF_NVTX_DEPTH || (fr[k].dom == d && !fr[k].t0)))) return k;
    return pn_pop_rec(d, pd, npd, k);
}

static int pn_pop_rec(pn_domain *d, const nvtxPayloadData_t *pd, size_t npd, int k) {
    if (k < 0) {
        PN_COUNT(unmatched_pops);
        return -1;
    }
    pn_range *fr = pn_self.frame;
    int i = k;
    if (fr[k].dom != d) {
        while (i >= 0 && fr[i].dom != d) i--;
        if (i < 0) i = k;               /* none of its domain: the innermost */
    }
    if (!fr[i].t0 && i == k) return k;  /* not recorded */
    const prof__tool *t = pn();
    if (i == k) {                       /* the innermost: ended in place */
        if (pd) pn_payloads(t, &fr[k], d, pd, npd);
        pn_emit(t, &fr[k], pn_tid());
        return k;
    }
    pn_range r = fr[i];
    memmove(&fr[i], &fr[i + 1], (size_t)(k - i) * sizeof r);
    if (r.t0) {
        if (pd) pn_payloads(t, &r, d, pd, npd);
        pn_emit(t, &r, pn_tid());
    }
    return k;
}

/* ---- start / end: ranges any thread may end ----------------------------------- */

static struct { uint32_t gen; int used; pn_range r; } pn_open[PROF_NVTX_OPEN];
static size_t pn_open_next;

static nvtxRangeId_t pn_start(pn_domain *d, const nvtxEventAttributes_t *a, const nvtxPayloadData_t *pd, size_t npd) {
    if (!d || d->ignore) return 0;
    const prof__tool *t = pn();
    if (!pn_recording(t)) return 0;     /* 0: an end with nothing to do */
    pn_range r;
    pn_attrs(t, &r, d, a);
    if (pd) {
        r.name = "(payload range)";
        pn_payloads(t, &r, d, pd, npd);
    }
    r.tid = pn_tid();
    r.t0 = t->now();
    nvtxRangeId_t id = 0;
    pthread_mutex_lock(&pn_lock);
    for (size_t n = 0; n < PROF_NVTX_OPEN; n++) {
        size_t i = (pn_open_next + n) % PROF_NVTX_OPEN;
        if (pn_open[i].used) continue;
        pn_open[i].used = 1;
        pn_open[i].gen++;
        pn_open[i].r = r;
        pn_open_next = i + 1;
        id = (uint64_t)pn_open[i].gen << 32 | (uint64_t)(i + 1);
        break;
    }
    pthread_mutex_unlock(&pn_lock);
    if (!id) PN_COUNT(open_full);
    else PN_COUNT(open);
    return id;
}

static void pn_end(nvtxRangeId_t id, const nvtxPayloadData_t *pd, size_t npd) {
    if (!id) return;                    /* not recorded, or not ours to know */
    const prof__tool *t = pn();
    size_t i = (size_t)(id & 0xffffffffu);
    pn_range r;
    int found = 0;
    pthread_mutex_lock(&pn_lock);
    if (i >= 1 && i <= PROF_NVTX_OPEN && pn_open[i - 1].used && pn_open[i - 1].gen == (uint32_t)(id >> 32)) {
        r = pn_open[i - 1].r;
        pn_open[i - 1].used = 0;
        found = 1;
    }
    pthread_mutex_unlock(&pn_lock);
    if (!found) {
        PN_COUNT(unknown_ends);
        return;
    }
    if (pd) pn_payloads(t, &r, r.dom, pd, npd);
    pn_emit(t, &r, pn_tid());
}

/* ---- marks, names -------------------------------------------------------------- */

static void pn_mark(pn_domain *d, const nvtxEventAttributes_t *a, const char *text) {
    if (!d || d->ignore) return;
    const prof__tool *t = pn();
    if (!pn_recording(t)) return;
    const char *name = text ? text : "(no message)";  /* an instant has no arguments: the message alone */
    if (!text && a && a->size >= 48) {
        if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) name = pn_intern(t, a->message.ascii);
        else if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE) name = pn_intern_w(t, a->message.unicode);
        else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) name = pn_registered(a->message.registered);
    }
    t->instant(name);
    __atomic_fetch_add(&pn_n.marks, 1, __ATOMIC_RELAXED);
}

static void pn_name_thread(uint32_t tid, const char *name) {
    const prof__tool *t = pn();
    if ((long)tid == pn_tid()) t->thread_name(name);
    else if (!t->name_tid((long)tid, name)) PN_COUNT(unnamed);
}

/* ---- the callbacks NVTX calls ------------------------------------------------ */

static void cb_mark_ex(const nvtxEventAttributes_t *a) { pn_mark(pn_domain_of(NULL), a, NULL); }
static void cb_mark_a(const char *m) { pn_mark(pn_domain_of(NULL), NULL, pn_intern(pn(), m)); }
static void cb_mark_w(const wchar_t *m) { pn_mark(pn_domain_of(NULL), NULL, pn_intern_w(pn(), m)); }
static nvtxRangeId_t cb_start_ex(const nvtxEventAttributes_t *a) { return pn_start(pn_domain_of(NULL), a, NULL, 0); }
static nvtxRangeId_t cb_start_a(const char *m) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = m;
    return pn_start(pn_domain_of(NULL), &a, NULL, 0);
}
static nvtxRangeId_t cb_start_w(const wchar_t *m) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = m;
    return pn_start(pn_domain_of(NULL), &a, NULL, 0);
}
static void cb_end(nvtxRangeId_t id) { pn_end(id, NULL, 0); }
static int cb_push_ex(const nvtxEventAttributes_t *a) { return pn_push(pn_domain_of(NULL), a, NULL); }
static int cb_push_a(const char *m) {
    pn_domain *d = pn_domain_of(NULL);
    return pn_push(d, NULL, pn_recording(pn()) ? pn_intern(pn(), m) : NULL);
}
static int cb_push_w(const wchar_t *m) {
    pn_domain *d = pn_domain_of(NULL);
    return pn_push(d, NULL, pn_recording(pn()) ? pn_intern_w(pn(), m) : NULL);
}
static int cb_pop(void) { return pn_pop(pn_domain_of(NULL), NULL, 0); }
static void cb_name_cat_a(uint32_t c, const char *n) { pn_name_category(pn_domain_of(NULL), c, pn_intern(pn(), n)); }
static void cb_name_cat_w(uint32_t c, const wchar_t *n) { pn_name_category(pn_domain_of(NULL), c, pn_intern_w(pn(), n)); }
static void cb_name_thread_a(uint32_t tid, const char *n) { pn_name_thread(tid, pn_intern(pn(), n)); }
static void cb_name_thread_w(uint32_t tid, const wchar_t *n) { pn_name_thread(tid, pn_intern_w(pn(), n)); }

static void cb_d_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { pn_mark(pn_domain_of(d), a, NULL); }
static nvtxRangeId_t cb_d_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { return pn_start(pn_domain_of(d), a, NULL, 0); }
static void cb_d_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; pn_end(id, NULL, 0); }
static int cb_d_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { return pn_push(pn_domain_of(d), a, NULL); }
static int cb_d_pop(nvtxDomainHandle_t d) { return pn_pop(pn_domain_of(d), NULL, 0); }
static void cb_d_name_cat_a(nvtxDomainHandle_t d, uint32_t c, const char *n) { pn_name_category(pn_domain_of(d), c, pn_intern(pn(), n)); }
static void cb_d_name_cat_w(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n) { pn_name_category(pn_domain_of(d), c, pn_intern_w(pn(), n)); }
static nvtxStringHandle_t cb_d_reg_a(nvtxDomainHandle_t d, const char *s) { (void)d; return pn_register(pn_intern(pn(), s)); }
static nvtxStringHandle_t cb_d_reg_w(nvtxDomainHandle_t d, const wchar_t *s) { (void)d; return pn_register(pn_intern_w(pn(), s)); }
static nvtxDomainHandle_t cb_d_create_a(const char *n) { return pn_domain_create(pn_intern(pn(), n)); }
static nvtxDomainHandle_t cb_d_create_w(const wchar_t *n) { return pn_domain_create(pn_intern_w(pn(), n)); }
static void cb_d_destroy(nvtxDomainHandle_t d) { (void)d; }     /* its name stays: its ranges may be open */
static void cb_initialize(const void *reserved) { (void)reserved; }

/* the payload extension's */
static void cb_p_mark(nvtxDomainHandle_t dh, const nvtxPayloadData_t *pd, size_t n) {
    pn_domain *d = pn_domain_of(dh);
    if (!d || d->ignore) return;
    const prof__tool *t = pn();
    if (!pn_recording(t)) return;
    (void)pd;
    (void)n;
    t->instant("(payload mark)");      /* an instant has no arguments */
    __atomic_fetch_add(&pn_n.marks, 1, __ATOMIC_RELAXED);
}
static int cb_p_push(nvtxDomainHandle_t dh, const nvtxPayloadData_t *pd, size_t n) {
    pn_domain *d = pn_domain_of(dh);
    int k = pn_push(d, NULL, NULL);
    if (k >= 0 && k < PROF_NVTX_DEPTH && pn_self.frame && pn_self.frame[k].t0) {
        pn_self.frame[k].name = "(payload range)";
        pn_payloads(pn(), &pn_self.frame[k], d, pd, n);
    }
    return k;
}
static int cb_p_pop(nvtxDomainHandle_t dh, const nvtxPayloadData_t *pd, size_t n) { return pn_pop(pn_domain_of(dh), pd, n); }
static nvtxRangeId_t cb_p_start(nvtxDomainHandle_t dh, const nvtxPayloadData_t *pd, size_t n) {
    return pn_start(pn_domain_of(dh), NULL, pd, n);
}
static void cb_p_end(nvtxDomainHandle_t dh, nvtxRangeId_t id, const nvtxPayloadData_t *pd, size_t n) {
    (void)dh;
    pn_end(id, pd, n);
}
static uint8_t cb_p_enabled(nvtxDomainHandle_t dh) {
    const pn_domain *d = pn_domain_of(dh);
    return d && !d->ignore;
}

/* ---- entry points ---------------------------------------------------------------- */

#define PN_SET(table, size, id, fn) \
    do { if ((unsigned)(id) < (size)) *(table)[id] = (NvtxFunctionPointer)(void (*)(void))(fn); } while (0)

/* Another tool named (Nsight sets NVTX_INJECTION64_PATH to its own): we were
   loaded some other way (LD_PRELOAD, linked): NVTX goes to it, said once. */
__attribute__((constructor)) static void pn_loaded(void) {
    const char *named = getenv("NVTX_INJECTION64_PATH");
    Dl_info self;
    if (!named || !*named || !dladdr((void *)(uintptr_t)pn_loaded, &self) || !self.dli_fname) return;
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(named, a) && realpath(self.dli_fname, b) && strcmp(a, b))
        fprintf(stderr, "prof: NVTX_INJECTION64_PATH names another tool (%s): prof.h leaves NVTX to it\n", named);
}

/* NVTX calls it once per copy of NVTX in the process (each library that
   includes NVTX3 has its own): each copy's tables get our callbacks. */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
    const NvtxExportTableCallbacks *cb = get ? (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS) : NULL;
    NvtxFunctionTable tab = NULL;
    unsigned int n = 0;
    if (!cb || cb->struct_size < sizeof *cb) return 0;
    (void)pn();                         /* the recorder, chosen now */
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &tab, &n) && tab) {
        PN_SET(tab, n, NVTX_CBID_CORE_MarkEx, cb_mark_ex);
        PN_SET(tab, n, NVTX_CBID_CORE_MarkA, cb_mark_a);
        PN_SET(tab, n, NVTX_CBID_CORE_MarkW, cb_mark_w);
        PN_SET(tab, n, NVTX_CBID_CORE_RangeStartEx, cb_start_ex);
        PN_SET(tab, n, NVTX_CBID_CORE_RangeStartA, cb_start_a);
        PN_SET(tab, n, NVTX_CBID_CORE_RangeStartW, cb_start_w);
        PN_SET(tab, n, NVTX_CBID_CORE_RangeEnd, cb_end);
        PN_SET(tab, n, NVTX_CBID_CORE_RangePushEx, cb_push_ex);
        PN_SET(tab, n, NVTX_CBID_CORE_RangePushA, cb_push_a);
        PN_SET(tab, n, NVTX_CBID_CORE_RangePushW, cb_push_w);
        PN_SET(tab, n, NVTX_CBID_CORE_RangePop, cb_pop);
        PN_SET(tab, n, NVTX_CBID_CORE_NameCategoryA, cb_name_cat_a);
        PN_SET(tab, n, NVTX_CBID_CORE_NameCategoryW, cb_name_cat_w);
        PN_SET(tab, n, NVTX_CBID_CORE_NameOsThreadA, cb_name_thread_a);
        PN_SET(tab, n, NVTX_CBID_CORE_NameOsThreadW, cb_name_thread_w);
    }
    tab = NULL;
    n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &tab, &n) && tab) {
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainMarkEx, cb_d_mark);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainRangeStartEx, cb_d_start);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainRangeEnd, cb_d_end);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainRangePushEx, cb_d_push);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainRangePop, cb_d_pop);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainNameCategoryA, cb_d_name_cat_a);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainNameCategoryW, cb_d_name_cat_w);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainRegisterStringA, cb_d_reg_a);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainRegisterStringW, cb_d_reg_w);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainCreateA, cb_d_create_a);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainCreateW, cb_d_create_w);
        PN_SET(tab, n, NVTX_CBID_CORE2_DomainDestroy, cb_d_destroy);
        PN_SET(tab, n, NVTX_CBID_CORE2_Initialize, cb_initialize);
    }
    return 1;
}

/* The payload extension (nvToolsExtPayload.h) asks for its own callbacks. */
__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *m);
int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *m) {
    if (!m || m->moduleId != NVTX_EXT_PAYLOAD_MODULEID || m->segmentsCount < 1 || !m->segments) return 1;  /* others: none */
    (void)pn();
    nvtxExtModuleSegment_t *s = &m->segments[0];
    intptr_t *slot = s->functionSlots;
    size_t n = s->slotCount;
#define PN_SLOT(id, fn) do { if ((size_t)(id) < n) slot[id] = (intptr_t)(fn); } while (0)
    PN_SLOT(NVTX3EXT_CBID_nvtxPayloadSchemaRegister, pn_schema_register);
    PN_SLOT(NVTX3EXT_CBID_nvtxPayloadEnumRegister, pn_enum_register);
    PN_SLOT(NVTX3EXT_CBID_nvtxMarkPayload, cb_p_mark);
    PN_SLOT(NVTX3EXT_CBID_nvtxRangePushPayload, cb_p_push);
    PN_SLOT(NVTX3EXT_CBID_nvtxRangePopPayload, cb_p_pop);
    PN_SLOT(NVTX3EXT_CBID_nvtxRangeStartPayload, cb_p_start);
    PN_SLOT(NVTX3EXT_CBID_nvtxRangeEndPayload, cb_p_end);
    PN_SLOT(NVTX3EXT_CBID_nvtxDomainIsEnabled, cb_p_enabled);
#undef PN_SLOT
    return 1;
}
