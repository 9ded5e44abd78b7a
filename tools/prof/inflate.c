/* inflate.c - gzip: a gzipped trace (.json.gz, .pftrace.gz) is inflated as
   it is read, a window at a time (gz_read), from its file or from memory.
   RFC 1951 inflate in the way of zlib's puff.c: canonical Huffman codes
   decoded a bit at a time (simple, fast enough for a tool that runs once),
   made resumable: the state between two calls is the block being decoded
   (its tables, a copy under way) and the last 32 KiB inflated (the
   distance codes' reach). RFC 1952's wrapper around it, members one after
   another, each CRC-32 checked. Malformed input is one line and exit 2,
   never a read past the input or a write past the output. */
#include "tool.h"

#include <string.h>

#define HIST 32768u                     /* how far back a distance reaches */

typedef struct { uint16_t count[16], symbol[288]; } huff;

enum { GZ_HEADER, GZ_BLOCK, GZ_STORED, GZ_CODES, GZ_TRAILER, GZ_END };

struct gz {
    const char *path;
    FILE *f;                            /* NULL: the input is [p, end) and no more */
    const uint8_t *p, *end;             /* input not yet taken */
    uint32_t bits, nbits;
    int state, last;                    /* where it is; the block is the member's last */
    size_t left;                        /* a stored block's bytes to come */
    size_t copy, back;                  /* a match being copied: its bytes to come, distance */
    huff lit, dist;                     /* the block's codes */
    uint64_t total, start;              /* bytes inflated; at the member's start */
    uint32_t crc;
    uint32_t crctab[256];
    uint8_t hist[HIST];                 /* the last HIST bytes inflated, a ring */
    uint8_t in[1 << 16];                /* read from f */
};

static _Noreturn void bad_gz(const gz *s, const char *what) {
    die("%s: not a valid gzip file: %s", s->path, what);
}

/* The next input byte; -1 at the input's end. */
static int inf_byte(gz *s) {
    if (s->p >= s->end) {
        if (!s->f) return -1;
        size_t n = fread(s->in, 1, sizeof s->in, s->f);
        if (!n) {
            if (ferror(s->f)) die("%s: cannot read", s->path);
            return -1;
        }
        s->p = s->in;
        s->end = s->in + n;
    }
    return *s->p++;
}

static uint32_t inf_bits(gz *s, unsigned need) {
    uint32_t v = s->bits;
    while (s->nbits < need) {
        int c = inf_byte(s);
        if (c < 0) bad_gz(s, "it ends inside a block");
        v |= (uint32_t)c << s->nbits;
        s->nbits += 8;
    }
    s->bits = (uint32_t)((uint64_t)v >> need);
    s->nbits -= need;
    return v & (uint32_t)((1ull << need) - 1);
}

/* The next byte of a byte-aligned part (headers, trailers, stored blocks). */
static unsigned inf_aligned(gz *s, const char *what) {
    int c = inf_byte(s);
    if (c < 0) bad_gz(s, what);
    return (unsigned)c;
}

static void inf_put(gz *s, uint8_t *dst, size_t *n, uint8_t c) {
    dst[(*n)++] = c;
    s->hist[s->total++ & (HIST - 1)] = c;
    s->crc = s->crctab[(s->crc ^ c) & 0xFF] ^ (s->crc >> 8);
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

static unsigned inf_decode(gz *s, const huff *h) {
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

static void inf_dynamic(gz *s) {
    static const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    uint8_t len[320];
    huff *lit = &s->lit, *dist = &s->dist;
    unsigned nlen = inf_bits(s, 5) + 257, ndist = inf_bits(s, 5) + 1, ncode = inf_bits(s, 4) + 4;
    if (nlen > 286 || ndist > 30) bad_gz(s, "too many codes");
    memset(len, 0, sizeof len);
    for (unsigned i = 0; i < ncode; i++) len[order[i]] = (uint8_t)inf_bits(s, 3);
    if (!inf_build(lit, len, 19)) bad_gz(s, "a bad code-length code");
    for (unsigned i = 0; i < nlen + ndist;) {
        unsigned sym = inf_decode(s, lit), rep, v = 0;
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
    if (!inf_build(lit, len, nlen) || !inf_build(dist, len + nlen, ndist)) bad_gz(s, "over-subscribed codes");
}

static void inf_fixed(gz *s) {
    uint8_t len[320];
    unsigned i = 0;
    for (; i < 144; i++) len[i] = 8;
    for (; i < 256; i++) len[i] = 9;
    for (; i < 280; i++) len[i] = 7;
    for (; i < 288; i++) len[i] = 8;
    for (; i < 318; i++) len[i] = 5;
    inf_build(&s->lit, len, 288);
    inf_build(&s->dist, len + 288, 30);
}

/* A member's header; 0 when the input has ended instead (after a member). */
static int inf_header(gz *s) {
    int c = inf_byte(s);
    if (c < 0) return 0;
    uint8_t h[10];
    h[0] = (uint8_t)c;
    for (int i = 1; i < 10; i++) h[i] = (uint8_t)inf_aligned(s, "a bad member header");
    if (h[0] != 0x1F || h[1] != 0x8B || h[2] != 8) bad_gz(s, "a bad member header");
    unsigned flg = h[3];
    if (flg & 4) {                          /* FEXTRA */
        size_t x = inf_aligned(s, "a cut header");
        x |= (size_t)inf_aligned(s, "a cut header") << 8;
        while (x--) inf_aligned(s, "a cut header");
    }
    for (unsigned f = 8; f <= 16; f <<= 1)  /* FNAME, FCOMMENT: NUL-terminated */
        if (flg & f)
            while (inf_aligned(s, "a cut header")) {}
    if (flg & 2) {                          /* FHCRC */
        inf_aligned(s, "a cut header");
        inf_aligned(s, "a cut header");
    }
    s->start = s->total;
    s->crc = 0xFFFFFFFFu;
    s->bits = s->nbits = 0;
    s->last = 0;
    return 1;
}

static void inf_trailer(gz *s) {
    uint32_t v[2] = { 0, 0 };
    s->bits = s->nbits = 0;                 /* the trailer is byte-aligned */
    for (int k = 0; k < 8; k++) v[k / 4] |= (uint32_t)inf_aligned(s, "a cut trailer") << (8 * (k % 4));
    if (~s->crc != v[0]) bad_gz(s, "its CRC-32 does not match");
    if ((uint32_t)(s->total - s->start) != v[1]) bad_gz(s, "its size does not match");
}

/* A block's header: a stored block's length, or its codes. */
static void inf_block(gz *s) {
    s->last = (int)inf_bits(s, 1);
    unsigned type = inf_bits(s, 2);
    if (type == 0) {                        /* stored */
        s->bits = s->nbits = 0;
        size_t len = inf_aligned(s, "a cut stored block");
        len |= (size_t)inf_aligned(s, "a cut stored block") << 8;
        size_t nlen = inf_aligned(s, "a cut stored block");
        nlen |= (size_t)inf_aligned(s, "a cut stored block") << 8;
        if (nlen != (~len & 0xFFFF)) bad_gz(s, "a stored block's length and its complement differ");
        s->left = len;
        s->state = GZ_STORED;
    } else if (type == 1) {
        inf_fixed(s);
        s->state = GZ_CODES;
    } else if (type == 2) {
        inf_dynamic(s);
        s->state = GZ_CODES;
    } else {
        bad_gz(s, "a block of type 3");
    }
}

/* Inflates into dst until it holds cap bytes or a block ends. */
static void inf_codes(gz *s, uint8_t *dst, size_t *n, size_t cap) {
    static const uint16_t lbase[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                        35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
    static const uint8_t lext[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
    static const uint16_t dbase[30] = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
                                        1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577 };
    static const uint8_t dext[30] = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };
    while (*n < cap) {
        if (s->copy) {                      /* a match, maybe begun in the last call */
            s->copy--;
            inf_put(s, dst, n, s->hist[(s->total - s->back) & (HIST - 1)]);
            continue;
        }
        unsigned sym = inf_decode(s, &s->lit);
        if (sym < 256) { inf_put(s, dst, n, (uint8_t)sym); continue; }
        if (sym == 256) {
            s->state = s->last ? GZ_TRAILER : GZ_BLOCK;
            return;
        }
        sym -= 257;
        if (sym >= 29) bad_gz(s, "a length symbol past 285");
        s->copy = lbase[sym] + inf_bits(s, lext[sym]);
        unsigned d = inf_decode(s, &s->dist);
        if (d >= 30) bad_gz(s, "a distance symbol past 29");
        s->back = dbase[d] + inf_bits(s, dext[d]);
        if (s->back > s->total) bad_gz(s, "a distance back past the start");
    }
}

size_t gz_read(gz *s, uint8_t *dst, size_t cap) {
    size_t n = 0;
    while (n < cap) {
        switch (s->state) {
        case GZ_HEADER:
            s->state = inf_header(s) ? GZ_BLOCK : GZ_END;
            break;
        case GZ_BLOCK:
            inf_block(s);
            break;
        case GZ_STORED:
            while (n < cap && s->left) {
                s->left--;
                inf_put(s, dst, &n, (uint8_t)inf_aligned(s, "a cut stored block"));
            }
            if (!s->left) s->state = s->last ? GZ_TRAILER : GZ_BLOCK;
            break;
        case GZ_CODES:
            inf_codes(s, dst, &n, cap);
            break;
        case GZ_TRAILER:
            inf_trailer(s);
            s->state = GZ_HEADER;
            break;
        default:
            return n;
        }
    }
    return n;
}

gz *gz_open(const char *path, FILE *f, const uint8_t *p, size_t n) {
    gz *s = xrealloc(NULL, sizeof *s);
    memset(s, 0, offsetof(gz, hist));
    s->path = path;
    s->f = f;
    if (!f) {
        s->p = p;
        s->end = p + n;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
        s->crctab[i] = c;
    }
    s->state = GZ_HEADER;               /* read by the first gz_read (its magic is there) */
    return s;
}

void gz_close(gz *s) {
    free(s);
}

