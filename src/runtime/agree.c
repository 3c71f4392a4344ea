/* SPDX-License-Identifier: MIT */
/* Rank agreement on arguments and input files (runtime/agree.h). */
#include "runtime/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

/* splitmix64's finaliser: spreads an item's hash before the order-free sum */
static uint64_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void arb_agree_init(arb_agree_t *a)
{
    memset(a, 0, sizeof *a);
}

static void add(arb_agree_t *a, const char *key, const char *shown, uint64_t hash)
{
    if (a->n == ARB_AGREE_MAX_ITEMS) {
        a->dropped++;
        a->overflow += mix(fnv(fnv(FNV_OFFSET, key, strlen(key)), &hash, sizeof hash));
        return;
    }
    arb_agree_item_t *it = &a->item[a->n++];
    snprintf(it->key, sizeof it->key, "%s", key);
    snprintf(it->shown, sizeof it->shown, "%s", shown);
    it->hash = hash;
}

static int is_file_opt(const char *key, const char *const *file_opts)
{
    for (unsigned i = 0; file_opts && file_opts[i]; i++)
        if (strcmp(key, file_opts[i]) == 0)
            return 1;
    return 0;
}

static arb_agree_item_t *find_mut(arb_agree_t *a, const char *key)
{
    for (unsigned i = 0; i < a->n; i++)
        if (strcmp(a->item[i].key, key) == 0)
            return &a->item[i];
    return NULL;
}

/* A repeated option is one item whose values are all of them in order ("8 12"): the
 * parser may keep the last or accumulate, and either way the ranks must agree. */
static void add_value(arb_agree_t *a, const char *key, const char *shown, uint64_t hash)
{
    arb_agree_item_t *it = find_mut(a, key);
    if (!it) {
        add(a, key, shown, hash);
        return;
    }
    it->hash = fnv(it->hash * FNV_PRIME, &hash, sizeof hash);
    size_t used = strlen(it->shown);
    snprintf(it->shown + used, sizeof it->shown - used, " %s", shown);
}

void arb_agree_args(arb_agree_t *a, int argc, char **argv, const char *const *file_opts)
{
    for (int i = 1; i < argc; i++) {
        const char *t = argv[i];
        char opt[48];
        const char *value = NULL;
        if (t[0] == '-' && t[1] && !(t[1] >= '0' && t[1] <= '9')) {
            const char *eq = strchr(t, '=');
            size_t ol = eq ? (size_t)(eq - t) : strlen(t);
            snprintf(opt, sizeof opt, "%.*s", (int)(ol < sizeof opt ? ol : sizeof opt - 1), t);
            if (eq)
                value = eq + 1;
            else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                value = argv[++i];
            if (is_file_opt(opt, file_opts))
                continue; /* recorded by content (arb_agree_file) */
        } else {
            snprintf(opt, sizeof opt, "argument %d", i);
            value = t;
        }
        const char *v = value ? value : "";
        uint64_t h = fnv(FNV_OFFSET, value ? "=" : "", value ? 1 : 0);
        add_value(a, opt, value ? v : "(given)", fnv(h, v, strlen(v)));
    }
}

void arb_agree_file(arb_agree_t *a, const char *key, const char *path)
{
    char shown[112];
    uint64_t h = FNV_OFFSET;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(shown, sizeof shown, "%.80s (unreadable)", path);
        add_value(a, key, shown, fnv(h, "unreadable", 10));
        return;
    }
    unsigned char buf[65536];
    size_t n, total = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        h = fnv(h, buf, n), total += n;
    fclose(f);
    size_t pl = strlen(path);
    snprintf(shown, sizeof shown, "%s%s (%zu bytes, content hash %08x)", pl > 70 ? "..." : "", pl > 70 ? path + pl - 67 : path,
             total, (unsigned)(h >> 32));
    add_value(a, key, shown, h);
}

uint64_t arb_agree_digest(const arb_agree_t *a)
{
    uint64_t d = mix(a->n + 0x9e3779b97f4a7c15ull) + a->overflow + mix(a->dropped);
    for (unsigned i = 0; i < a->n; i++) {
        const arb_agree_item_t *it = &a->item[i];
        d += mix(fnv(fnv(FNV_OFFSET, it->key, strlen(it->key)), &it->hash, sizeof it->hash));
    }
    return d;
}

static const arb_agree_item_t *find(const arb_agree_t *a, const char *key)
{
    return find_mut((arb_agree_t *)a, key);
}

static int differs(const arb_agree_t *a, const arb_agree_t *b, const char *key)
{
    const arb_agree_item_t *x = find(a, key), *y = find(b, key);
    return !x != !y || (x && x->hash != y->hash);
}

static void shown(const arb_agree_t *a, const char *key, char *buf, size_t len)
{
    const arb_agree_item_t *x = find(a, key);
    if (!x)
        snprintf(buf, len, "(not given)");
    else
        snprintf(buf, len, x->shown[0] == '(' ? "%s" : "'%s'", x->shown);
}

/* Rank 0's message: the first key (rank 0's order, then the others') on which some rank
 * differs from rank 0, with the values and the ranks. */
static void describe(const arb_agree_t *all, int nranks, char *msg, size_t len)
{
    const char *key = NULL;
    /* rank 0's items first, then those only other ranks have: items x ranks x items */
    for (unsigned i = 0; i < all[0].n && !key; i++)
        for (int q = 1; q < nranks && !key; q++)
            if (differs(&all[0], &all[q], all[0].item[i].key))
                key = all[0].item[i].key;
    for (int q = 1; q < nranks && !key; q++)
        for (unsigned i = 0; i < all[q].n && !key; i++)
            if (!find(&all[0], all[q].item[i].key))
                key = all[q].item[i].key;
    if (!key) {
        snprintf(msg, len, "ranks were launched with different arguments (more than %u items; the difference is past "
                 "the first %u)", ARB_AGREE_MAX_ITEMS, ARB_AGREE_MAX_ITEMS);
        return;
    }
    char v0[128], vq[128];
    shown(&all[0], key, v0, sizeof v0);
    int first = -1, ndiff = 0;
    for (int q = 1; q < nranks; q++)
        if (differs(&all[0], &all[q], key))
            ndiff++, first = first < 0 ? q : first;
    shown(&all[first], key, vq, sizeof vq);
    char ranks[256] = "";
    size_t used = 0;
    int listed = 0;
    for (int q = 1; q < nranks && used + 16 < sizeof ranks; q++)
        if (differs(&all[0], &all[q], key) && listed++ < 8)
            used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d", used ? "," : "", q);
    if (listed > 8)
        snprintf(ranks + used, sizeof ranks - used, ",... (%d in all)", ndiff);
    snprintf(msg, len, "ranks disagree on %s: rank 0 has %s, rank %d has %s (ranks differing from rank 0: %s); launch "
             "every rank with the same arguments and the same input files", key, v0, first, vq, ranks);
}

int arb_agree_check(const arb_agree_t *a, arb_mpi_t *m, char *msg, size_t len)
{
    uint64_t d = arb_agree_digest(a), lo = d, hi = d;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, m->world);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, m->world);
    if (lo == hi)
        return 0;
    arb_agree_t *all = m->rank == 0 ? malloc((size_t)m->nranks * sizeof *all) : NULL;
    MPI_Gather(a, (int)sizeof *a, MPI_BYTE, all, (int)sizeof *a, MPI_BYTE, 0, m->world);
    if (m->rank == 0 && all)
        describe(all, m->nranks, msg, len);
    else if (m->rank == 0)
        snprintf(msg, len, "ranks were launched with different arguments or input files (out of memory naming them)");
    else
        snprintf(msg, len, "ranks disagree on their arguments or input files (rank 0 names the difference)");
    free(all);
    return -1;
}

int arb_agree_argv(arb_mpi_t *m, int argc, char **argv, char *msg, size_t len)
{
    arb_agree_t *a = malloc(sizeof *a);
    int failed = !a, rc;
    if (a) {
        arb_agree_init(a);
        arb_agree_args(a, argc, argv, NULL);
    }
    /* a rank out of memory still joins the check, so nobody waits for it */
    if (arb_agree_failure(m, failed, msg, len) >= 0)
        rc = -1;
    else
        rc = arb_agree_check(a, m, msg, len);
    free(a);
    return rc;
}
