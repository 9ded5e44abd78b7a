/* symbols.c - the functions of a run's native addresses, offline: a trace's
   executable mappings (prof_samples, prof.h's >>sample) name the ELF files
   and their build ids; each file's .symtab (else .dynsym) gives its
   functions, and an address becomes a function by its file offset and the
   file's PT_LOAD segments. A file missing, not a 64-bit little-endian ELF
   file, or with another build id than the run's is said once, and its
   addresses keep the form "file+0xoffset". C++ names are demangled by the
   system's C++ runtime's own demangler (__cxa_demangle of libstdc++, else
   libc++abi), loaded with dlopen when a file has a mangled name: the tool
   itself is C and links no C++ runtime. Without one, names stay mangled,
   said once. */
#include "tool.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint64_t lo, hi; const char *name; } sym;
typedef struct { uint64_t off, filesz, vaddr; } seg;

struct elf_file {
    char *path, *build_id;
    int ok;                             /* read, and its build id the run's */
    sym *s;
    size_t ns;
    seg *g;
    size_t ng;
    char *strs;                         /* its string table(s), kept for the names */
    char **dem;                         /* the demangled names its symbols point to */
    size_t ndem;
};

static elf_file **g_files;             /* each apart: callers keep pointers to them */
static size_t g_nfiles;

static int sym_cmp(const void *a, const void *b) {
    const sym *x = (const sym *)a, *y = (const sym *)b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static uint16_t u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = (size_t)1 << 20, len = 0;
    unsigned char *b = xrealloc(NULL, cap);
    for (;;) {
        len += fread(b + len, 1, cap - len, f);
        if (len < cap) break;
        cap *= 2;
        b = xrealloc(b, cap);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(b); return NULL; }
    *n = len;
    return b;
}

/* The file's build id (hex, into out[41]) from its notes' sections. */
static void elf_build_id(const unsigned char *b, size_t n, uint64_t shoff, uint16_t shnum, uint16_t shentsize,
                         char *out) {
    out[0] = 0;
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + (uint64_t)i * shentsize;
        if (u32(sh + 4) != 7 /* SHT_NOTE */) continue;
        uint64_t off = u64(sh + 24), size = u64(sh + 32);
        if (off > n || size > n - off) continue;
        for (uint64_t k = 0; k + 12 <= size;) {
            uint32_t nsz = u32(b + off + k), dsz = u32(b + off + k + 4), type = u32(b + off + k + 8);
            uint64_t d = k + 12 + ((nsz + 3u) & ~3u);
            if (d + dsz > size) break;
            if (type == 3 && nsz == 4 && !memcmp(b + off + k + 12, "GNU", 4) && dsz <= 20) {
                for (uint32_t j = 0; j < dsz; j++) snprintf(out + 2 * j, 3, "%02x", b[off + d + j]);
                return;
            }
            k = d + ((dsz + 3u) & ~3u);
        }
    }
}

/* name demangled (malloc'd), or NULL: not a C++ name, or no demangler. */
static char *demangle(const char *name) {
    typedef char *(*cxa_demangle)(const char *, char *, size_t *, int *);
    static cxa_demangle fn;
    static int tried;
    if (name[0] != '_' || name[1] != 'Z') return NULL;
    if (!tried) {
        static const char *const libs[] = { "libstdc++.so.6", "libc++abi.so.1" };
        tried = 1;
        for (size_t i = 0; i < sizeof libs / sizeof *libs && !fn; i++) {
            void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
            void *sym = h ? dlsym(h, "__cxa_demangle") : NULL;
            if (sym) memcpy(&fn, &sym, sizeof fn);  /* (ISO C has no cast from an object pointer) */
        }
        if (!fn) note("no C++ runtime to demangle with (libstdc++.so.6 or libc++abi.so.1): C++ names stay mangled");
    }
    int status = -1;
    char *out = fn ? fn(name, NULL, NULL, &status) : NULL;
    if (status) {
        free(out);
        return NULL;
    }
    return out;
}

/* The functions of one symbol table section (type: SHT_SYMTAB 2, SHT_DYNSYM 11). */
static void elf_syms(elf_file *e, const unsigned char *b, size_t n, const unsigned char *sh0, uint16_t shnum,
                     uint16_t shentsize, uint32_t type) {
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = sh0 + (uint64_t)i * shentsize;
        if (u32(sh + 4) != type) continue;
        uint64_t off = u64(sh + 24), size = u64(sh + 32), ent = u64(sh + 56);
        uint32_t link = u32(sh + 40);
        if (link >= shnum || ent < 24 || off > n || size > n - off) continue;
        const unsigned char *ssh = sh0 + (uint64_t)link * shentsize;
        uint64_t soff = u64(ssh + 24), ssize = u64(ssh + 32);
        if (soff > n || ssize > n - soff || !ssize) continue;
        free(e->strs);                  /* its strings, copied and NUL-ended (a table read before */
        e->strs = xrealloc(NULL, ssize + 1);    /* this one had no functions: none points there) */
        memcpy(e->strs, b + soff, ssize);
        e->strs[ssize] = 0;
        const size_t base = 0;
        for (uint64_t k = 0; k + ent <= size; k += ent) {
            const unsigned char *s = b + off + k;
            uint32_t name = u32(s);
            unsigned char info = s[4];
            uint16_t shndx = u16(s + 6);
            uint64_t value = u64(s + 8), sz = u64(s + 16);
            if ((info & 15) != 2 /* STT_FUNC */ || !shndx || name >= ssize || !value) continue;
            e->s = xrealloc(e->s, (e->ns + 1) * sizeof *e->s);
            e->s[e->ns].lo = value;
            e->s[e->ns].hi = value + (sz ? sz : 1);
            e->s[e->ns].name = e->strs + base + name;
            char *d = demangle(e->s[e->ns].name);
            if (d) {
                e->dem = xrealloc(e->dem, (e->ndem + 1) * sizeof *e->dem);
                e->dem[e->ndem++] = d;
                e->s[e->ns].name = d;
            }
            e->ns++;
        }
        return;
    }
}

static void elf_open(elf_file *e) {
    size_t n = 0;
    unsigned char *b = slurp(e->path, &n);
    if (!b) {
        note("%s: cannot read (%s): its addresses stay file+offset", e->path, strerror(errno));
        return;
    }
    if (n < 64 || memcmp(b, "\177ELF", 4) || b[4] != 2 || b[5] != 1) {
        note("%s: not a 64-bit little-endian ELF file: its addresses stay file+offset", e->path);
        free(b);
        return;
    }
    uint64_t phoff = u64(b + 32), shoff = u64(b + 40);
    uint16_t phentsize = u16(b + 54), phnum = u16(b + 56), shentsize = u16(b + 58), shnum = u16(b + 60);
    if (phentsize < 56 || shentsize < 64 || phoff > n || (uint64_t)phnum * phentsize > n - phoff || shoff > n ||
        (uint64_t)shnum * shentsize > n - shoff) {
        note("%s: its ELF headers do not fit the file: its addresses stay file+offset", e->path);
        free(b);
        return;
    }
    char id[41];
    elf_build_id(b, n, shoff, shnum, shentsize, id);
    if (e->build_id[0] && strcmp(id, e->build_id)) {
        note("%s: its build id is %s, the run's was %s (the file changed since): its addresses stay file+offset",
             e->path, id[0] ? id : "none", e->build_id);
        free(b);
        return;
    }
    for (uint16_t i = 0; i < phnum; i++) {
        const unsigned char *ph = b + phoff + (uint64_t)i * phentsize;
        if (u32(ph) != 1 /* PT_LOAD */) continue;
        e->g = xrealloc(e->g, (e->ng + 1) * sizeof *e->g);
        e->g[e->ng].off = u64(ph + 8);
        e->g[e->ng].vaddr = u64(ph + 16);
        e->g[e->ng].filesz = u64(ph + 32);
        e->ng++;
    }
    elf_syms(e, b, n, b + shoff, shnum, shentsize, 2);
    if (!e->ns) elf_syms(e, b, n, b + shoff, shnum, shentsize, 11);
    if (e->ns) qsort(e->s, e->ns, sizeof *e->s, sym_cmp);
    e->ok = 1;
    free(b);
}

elf_file *elf_get(const char *path, const char *build_id) {
    for (size_t i = 0; i < g_nfiles; i++)
        if (!strcmp(g_files[i]->path, path)) return g_files[i];
    g_files = xrealloc(g_files, (g_nfiles + 1) * sizeof *g_files);
    elf_file *e = xrealloc(NULL, sizeof *e);
    g_files[g_nfiles++] = e;
    memset(e, 0, sizeof *e);
    size_t pn = strlen(path) + 1, bn = strlen(build_id) + 1;
    e->path = memcpy(xrealloc(NULL, pn), path, pn);
    e->build_id = memcpy(xrealloc(NULL, bn), build_id, bn);
    elf_open(e);
    return e;
}

/* The function holding file offset off of e, or NULL. */
const char *elf_function(const elf_file *e, uint64_t off) {
    if (!e->ok) return NULL;
    uint64_t va = 0;
    int found = 0;
    for (size_t i = 0; i < e->ng && !found; i++)
        if (off >= e->g[i].off && off - e->g[i].off < e->g[i].filesz) {
            va = off - e->g[i].off + e->g[i].vaddr;
            found = 1;
        }
    if (!found) return NULL;
    size_t lo = 0, hi = e->ns;          /* the last symbol starting at or before va */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (e->s[mid].lo <= va) lo = mid + 1;
        else hi = mid;
    }
    for (size_t k = lo; k-- > 0;) {     /* symbols may nest (aliases): the innermost that holds it */
        if (va < e->s[k].hi) return e->s[k].name;
        if (lo - k > 8) break;
    }
    return NULL;
}

void elf_free(void) {
    for (size_t i = 0; i < g_nfiles; i++) {
        free(g_files[i]->path);
        free(g_files[i]->build_id);
        free(g_files[i]->s);
        free(g_files[i]->g);
        free(g_files[i]->strs);
        for (size_t k = 0; k < g_files[i]->ndem; k++) free(g_files[i]->dem[k]);
        free(g_files[i]->dem);
        free(g_files[i]);
    }
    free(g_files);
    g_files = NULL;
    g_nfiles = 0;
}
