/* inflate.c - gzip: a gzipped trace (.json.gz, .pftrace.gz) is inflated in
   memory before it is read. RFC 1951 inflate in the way of zlib's puff.c:
   canonical Huffman codes decoded a bit at a time (simple, fast enough for a
   tool that runs once). RFC 1952's wrapper around it, members one after
   another, each CRC-32 checked. Malformed input is one line and exit 2,
   never a read past the input or a write past the output. */
#include "tool.h"

#include <string.h>

typedef struct {
    const uint8_t *p, *end;
    uint32_t bits, nbits;
    uint8_t *out;
    size_t n, cap;
    const char *path;
} inf;

typedef struct { uint16_t count[16], symbol[288]; } huff;

static _Noreturn void bad_gz(const inf *s, const char *what) {
    die("%s: not a valid gzip file: %s", s->path, what);
}

static uint32_t inf_bits(inf *s, unsigned need) {
    uint32_t v = s->bits;
    while (s->nbits < need) {
        if (s->p >= s->end) bad_gz(s, "it ends inside a block");
        v |= (uint32_t)*s->p++ << s->nbits;
        s->nbits += 8;
    }
    s->bits = (uint32_t)((uint64_t)v >> need);
    s->nbits -= need;
    return v & (uint32_t)((1ull << need) - 1);
}

static uint8_t *g_inflating;            /* reachable from gunzip_free if die() cuts it short */

static void inf_put(inf *s, uint8_t c) {
    if (s->n == s->cap) {
        if (s->cap > ((size_t)1 << 40)) bad_gz(s, "it inflates past 1 TiB");
        s->cap = s->cap ? 2 * s->cap : (size_t)1 << 20;
        s->out = g_inflating = xrealloc(s->out, s->cap);
    }
    s->out[s->n++] = c;
}

/* Canonical code from code lengths; 0 if the lengths over-subscribe. */
static int inf_build(huff *h, const uint8_t *len, unsigned n) {
    uint16_t offs[16];
    memset(h->count, 0, sizeof h->count);
    for (unsigned i = 0; i < n; i++) h->count[len[i]]++;
    int left = 1;
    for (unsigned b = 1; b < 16; b++) {
        left = 2 * left - h->count[b];
        if (left < 0) return 0;
    }
    offs[1] = 0;
    for (unsigned b = 1; b < 15; b++) offs[b + 1] = (uint16_t)(offs[b] + h->count[b]);
    for (unsigned i = 0; i < n; i++)
        if (len[i]) h->symbol[offs[len[i]]++] = (uint16_t)i;
    return 1;
}

static unsigned inf_decode(inf *s, const huff *h) {
    int code = 0, first = 0, index = 0;
    for (unsigned b = 1; b < 16; b++) {
        code |= (int)inf_bits(s, 1);
        int count = h->count[b];
        if (code - count < first) return h->symbol[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    bad_gz(s, "a code no table has");
}

static void inf_codes(inf *s, const huff *lit, const huff *dist) {
    static const uint16_t lbase[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                        35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
    static const uint8_t lext[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
    static const uint16_t dbase[30] = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
                                        1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577 };
    static const uint8_t dext[30] = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };
    for (;;) {
        unsigned sym = inf_decode(s, lit);
        if (sym < 256) { inf_put(s, (uint8_t)sym); continue; }
        if (sym == 256) return;
        sym -= 257;
        if (sym >= 29) bad_gz(s, "a length symbol past 285");
        size_t len = lbase[sym] + inf_bits(s, lext[sym]);
        unsigned d = inf_decode(s, dist);
        if (d >= 30) bad_gz(s, "a distance symbol past 29");
        size_t back = dbase[d] + inf_bits(s, dext[d]);
        if (back > s->n) bad_gz(s, "a distance back past the start");
        while (len--) inf_put(s, s->out[s->n - back]);
    }
}

static void inf_dynamic(inf *s) {
    static const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    uint8_t len[320];
    huff lit, dist;
    unsigned nlen = inf_bits(s, 5) + 257, ndist = inf_bits(s, 5) + 1, ncode = inf_bits(s, 4) + 4;
    if (nlen > 286 || ndist > 30) bad_gz(s, "too many codes");
    memset(len, 0, sizeof len);
    for (unsigned i = 0; i < ncode; i++) len[order[i]] = (uint8_t)inf_bits(s, 3);
    if (!inf_build(&lit, len, 19)) bad_gz(s, "a bad code-length code");
    for (unsigned i = 0; i < nlen + ndist;) {
        unsigned sym = inf_decode(s, &lit), rep, v = 0;
        if (sym < 16) { len[i++] = (uint8_t)sym; continue; }
        if (sym == 16) {
            if (!i) bad_gz(s, "a repeat with nothing before it");
            v = len[i - 1];
            rep = 3 + inf_bits(s, 2);
        } else {
            rep = sym == 17 ? 3 + inf_bits(s, 3) : 11 + inf_bits(s, 7);
        }
        if (i + rep > nlen + ndist) bad_gz(s, "code lengths past their count");
        while (rep--) len[i++] = (uint8_t)v;
    }
    if (!len[256]) bad_gz(s, "no end-of-block code");
    if (!inf_build(&lit, len, nlen) || !inf_build(&dist, len + nlen, ndist)) bad_gz(s, "over-subscribed codes");
    inf_codes(s, &lit, &dist);
}

static void inf_fixed(inf *s) {
    uint8_t len[320];
    huff lit, dist;
    unsigned i = 0;
    for (; i < 144; i++) len[i] = 8;
    for (; i < 256; i++) len[i] = 9;
    for (; i < 280; i++) len[i] = 7;
    for (; i < 288; i++) len[i] = 8;
    for (; i < 318; i++) len[i] = 5;
    inf_build(&lit, len, 288);
    inf_build(&dist, len + 288, 30);
    inf_codes(s, &lit, &dist);
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

/* Replaces t's gzip bytes by what they inflate to. */
void gunzip_trace(trace *t) {
    inf s = { (const uint8_t *)t->buf, (const uint8_t *)t->buf + t->len, 0, 0, NULL, 0, 0, t->path };
    while (s.p < s.end) {
        if (s.end - s.p < 18 || s.p[0] != 0x1F || s.p[1] != 0x8B || s.p[2] != 8) bad_gz(&s, "a bad member header");
        unsigned flg = s.p[3];
        s.p += 10;
        if (flg & 4) {                          /* FEXTRA */
            if (s.end - s.p < 2) bad_gz(&s, "a cut header");
            size_t x = s.p[0] | (size_t)s.p[1] << 8;
            if ((size_t)(s.end - s.p) < x + 2) bad_gz(&s, "a cut header");
            s.p += 2 + x;
        }
        for (unsigned f = 8; f <= 16; f <<= 1)  /* FNAME, FCOMMENT: NUL-terminated */
            if (flg & f) {
                while (s.p < s.end && *s.p) s.p++;
                if (s.p++ >= s.end) bad_gz(&s, "a cut header");
            }
        if (flg & 2) {                          /* FHCRC */
            if (s.end - s.p < 2) bad_gz(&s, "a cut header");
            s.p += 2;
        }
        size_t start = s.n;
        s.bits = s.nbits = 0;
        for (unsigned last = 0; !last;) {
            last = inf_bits(&s, 1);
            unsigned type = inf_bits(&s, 2);
            if (type == 0) {                    /* stored */
                s.bits = s.nbits = 0;
                if (s.end - s.p < 4) bad_gz(&s, "a cut stored block");
                size_t len = s.p[0] | (size_t)s.p[1] << 8;
                if ((s.p[2] | (size_t)s.p[3] << 8) != (~len & 0xFFFF)) bad_gz(&s, "a stored block's length and its complement differ");
                s.p += 4;
                if ((size_t)(s.end - s.p) < len) bad_gz(&s, "a cut stored block");
                while (len--) inf_put(&s, *s.p++);
            } else if (type == 1) {
                inf_fixed(&s);
            } else if (type == 2) {
                inf_dynamic(&s);
            } else {
                bad_gz(&s, "a block of type 3");
            }
        }
        s.bits = s.nbits = 0;                   /* the trailer is byte-aligned */
        if (s.end - s.p < 8) bad_gz(&s, "a cut trailer");
        uint32_t crc = s.p[0] | (uint32_t)s.p[1] << 8 | (uint32_t)s.p[2] << 16 | (uint32_t)s.p[3] << 24;
        uint32_t size = s.p[4] | (uint32_t)s.p[5] << 8 | (uint32_t)s.p[6] << 16 | (uint32_t)s.p[7] << 24;
        s.p += 8;
        /* an empty member inflates to nothing: s.out may still be NULL */
        if ((s.n > start ? crc32_of(s.out + start, s.n - start) : 0) != crc) bad_gz(&s, "its CRC-32 does not match");
        if ((uint32_t)(s.n - start) != size) bad_gz(&s, "its size does not match");
    }
    if (!s.out) s.out = xrealloc(NULL, 1);  /* nothing inflated: an empty trace, never a NULL one */
    free(t->buf);
    t->buf = (char *)s.out;
    t->len = s.n;
    g_inflating = NULL;
}

void gunzip_free(void) {
    free(g_inflating);
    g_inflating = NULL;
}
