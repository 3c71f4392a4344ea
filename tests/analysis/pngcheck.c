/* SPDX-License-Identifier: MIT */
/*
 * pngcheck FILE.png MIN_COLOURS: exit 0 when FILE is a valid non-interlaced 8-bit PNG of
 * at least 100x100 pixels with at least MIN_COLOURS distinct pixel values (a blank or
 * nearly blank image fails), 1 otherwise, with the reason on stderr. Decodes with zlib.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static int fail(const char *path, const char *why)
{
    fprintf(stderr, "pngcheck: %s: %s\n", path, why);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return fail("usage", "pngcheck FILE.png MIN_COLOURS");
    const char *path = argv[1];
    long min_colours = strtol(argv[2], NULL, 10);
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(path, "cannot open");
    static unsigned char file[64 << 20];
    size_t len = fread(file, 1, sizeof file, f);
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 8 + 25 || memcmp(file, sig, 8) != 0)
        return fail(path, "no PNG signature");
    uint32_t w = 0, h = 0;
    int ctype = -1, depth = 0, interlace = 0;
    unsigned char *idat = malloc(len);
    size_t nidat = 0;
    if (!idat)
        return fail(path, "out of memory");
    for (size_t p = 8; p + 12 <= len;) {
        uint32_t clen = be32(file + p);
        const unsigned char *type = file + p + 4, *data = file + p + 8;
        if (clen > len - p - 12)
            return fail(path, "truncated chunk");
        if (memcmp(type, "IHDR", 4) == 0 && clen >= 13) {
            w = be32(data), h = be32(data + 4), depth = data[8], ctype = data[9], interlace = data[12];
        } else if (memcmp(type, "IDAT", 4) == 0) {
            memcpy(idat + nidat, data, clen);
            nidat += clen;
        }
        p += 12 + clen;
    }
    int channels = ctype == 2 ? 3 : ctype == 6 ? 4 : ctype == 3 || ctype == 0 ? 1 : ctype == 4 ? 2 : 0;
    if (!channels || depth != 8 || interlace)
        return fail(path, "unsupported PNG (expected 8-bit, non-interlaced)");
    if (w < 100 || h < 100 || w > 20000 || h > 20000)
        return fail(path, "implausible size (expected 100..20000 pixels a side)");
    size_t stride = (size_t)w * channels, rawlen = (stride + 1) * h;
    unsigned char *raw = malloc(rawlen);
    uLongf got = rawlen;
    if (!raw || uncompress(raw, &got, idat, nidat) != Z_OK || got != rawlen)
        return fail(path, "image data does not inflate to width x height");
    /* Undo the per-row filters in place (PNG spec, section 9). */
    for (uint32_t y = 0; y < h; y++) {
        unsigned char *row = raw + y * (stride + 1) + 1, *prev = y ? row - (stride + 1) : NULL;
        int ft = row[-1];
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)channels ? row[x - channels] : 0, b = prev ? prev[x] : 0;
            int c = prev && x >= (size_t)channels ? prev[x - channels] : 0;
            int add = ft == 0 ? 0 : ft == 1 ? a : ft == 2 ? b : ft == 3 ? (a + b) / 2 : ft == 4 ? paeth(a, b, c) : -1;
            if (add < 0)
                return fail(path, "bad row filter");
            row[x] = (unsigned char)(row[x] + add);
        }
    }
    /* Distinct pixel values, up to a cap, by a small open-addressing set. */
    enum { SET = 1 << 16 };
    static uint32_t set[SET];
    static unsigned char used[SET];
    long distinct = 0;
    for (uint32_t y = 0; y < h && distinct < min_colours; y++)
        for (uint32_t x = 0; x < w && distinct < min_colours; x++) {
            const unsigned char *px = raw + y * (stride + 1) + 1 + (size_t)x * channels;
            uint32_t v = 0;
            for (int k = 0; k < channels; k++)
                v = v << 8 | px[k];
            uint32_t hsh = (v * 2654435761u) & (SET - 1);
            while (used[hsh] && set[hsh] != v)
                hsh = (hsh + 1) & (SET - 1);
            if (!used[hsh]) {
                used[hsh] = 1;
                set[hsh] = v;
                distinct++;
            }
        }
    free(raw);
    free(idat);
    if (distinct < min_colours) {
        fprintf(stderr, "pngcheck: %s: only %ld distinct colours (expected >= %ld): blank?\n", path, distinct, min_colours);
        return 1;
    }
    printf("pngcheck: %s: %ux%u, >= %ld colours\n", path, w, h, distinct);
    return 0;
}
