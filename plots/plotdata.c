/* SPDX-License-Identifier: MIT */
/*
 * arb-plotdata RESULTS.csv... OUTDIR: turns results into gnuplot input for render.sh
 * (docs/plots.md). For each figure (fabric, ranks, nodes, dtype, op, mode), in OUTDIR/data/:
 *   FIG.gp, FIG__oN.dat        the overview: one series per implementation (its fastest
 *                              variant at each size) and one per reference floor, at most
 *                              MAX_OVERVIEW_SERIES in all;
 *   FIG__IMPL.gp, ...__sN.dat  every variant of one implementation, with the floors.
 * Rows: check=pass rows and the timed rows of reference floors (role.h); where several
 * rows measure one variant at one size the last one read wins. Data columns: bytes,
 * median_us, p10_us, p90_us, busbw_gbs (nccl-tests definition), speedup over the fastest
 * baseline variant at that size (NaN where none was measured). Times in microseconds,
 * sizes in bytes per rank.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "manifest.h"
#include "analysis/points.h"
#include "results/role.h"

/* More lines than this in one picture cannot be told apart. */
#define MAX_OVERVIEW_SERIES 8
/* Implementations in one overview: colours stay fixed per implementation across figures. */
static const char *const family_colors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                            "#E69F00", "#56B4E9", "#882255", "#117733"};
static const char *const baseline_color = "#000000";
static const char *const floor_colors[] = {"#555555", "#999999"};
/* Variants in one detail figure; beyond 12 the colours repeat with another dash. */
static const char *const variant_colors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                                             "#882255", "#117733", "#332288", "#AA4499", "#999933", "#000000"};
/* One figure per point key (fabric, ranks, nodes, dtype, op, mode). */
static int cmp_fig(pt_t a, pt_t b) { return arb_point_key_cmp(arb_point_key(a), arb_point_key(b)); }

/* One variant: impl, params, fusion. */
static int cmp_variant(pt_t a, pt_t b)
{
    int c = cmp_fig(a, b);
    if (c || (c = strcmp(a->impl, b->impl)) || (c = strcmp(a->params, b->params)) || (c = strcmp(a->fusion, b->fusion)))
        return c;
    return 0;
}

static int cmp_point(const void *pa, const void *pb)
{
    pt_t a = *(const pt_t *)pa, b = *(const pt_t *)pb;
    int c = cmp_variant(a, b);
    if (c)
        return c;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? -1 : 1;
    return a < b ? -1 : a > b; /* input order: the pointset keeps file order */
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* File-name-safe copy: [A-Za-z0-9.-] kept, everything else '_'. */
static void safe_name(char *out, size_t len, const char *s)
{
    size_t o = 0;
    for (; *s && o + 1 < len; s++)
        out[o++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' || *s == '-' ? *s : '_';
    out[o] = '\0';
}


/* The implementations of the whole input, baseline ones first: colour i is theirs. */
typedef struct families {
    const char **impl;
    size_t n;
} families_t;

static const char *family_color(const families_t *f, const char *impl, arb_role_t role)
{
    if (role == ARB_ROLE_BASELINE)
        return baseline_color;
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->impl[i], impl) == 0)
            return family_colors[i % NELEM(family_colors)];
    return family_colors[0];
}


/* The rows of [s, e) at their fastest per size (s sorted by variant then bytes). */
static size_t fastest_per_size(pt_t *s, pt_t *e, pt_t *out)
{
    size_t n = 0;
    for (pt_t *q = s; q < e; q++) {
        size_t i = 0;
        while (i < n && out[i]->bytes != (*q)->bytes)
            i++;
        if (i == n)
            out[n++] = *q;
        else if ((*q)->median_us < out[i]->median_us)
            out[i] = *q;
    }
    for (size_t i = 1; i < n; i++) /* insertion sort by bytes: few sizes */
        for (size_t j = i; j > 0 && out[j - 1]->bytes > out[j]->bytes; j--) {
            pt_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* Is the item "k=v" (len bytes) in every variant's params of [s, e)? */
static int item_everywhere(pt_t *s, pt_t *e, const char *item, size_t len)
{
    for (pt_t *q = s; q < e; q++) {
        const char *p = (*q)->params;
        int found = 0;
        while (*p && !found) {
            size_t l = strcspn(p, ",");
            found = l == len && strncmp(p, item, len) == 0;
            p += l + (p[l] == ',');
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* params without the items every variant shares (named once in the title instead). */
static void short_params(pt_t *s, pt_t *e, const char *params, char *out, size_t len, char *common, size_t clen)
{
    out[0] = '\0';
    for (const char *p = params; *p;) {
        size_t l = strcspn(p, ",");
        char item[256];
        snprintf(item, sizeof item, "%.*s", (int)(l < 255 ? l : 255), p);
        if (l && !item_everywhere(s, e, p, l))
            list_append(out, len, item);
        else if (l && common && !strstr(common, item))
            list_append(common, clen, item);
        p += l + (p[l] == ',');
    }
    for (char *c = out; *c; c++)
        if (*c == ' ')
            *c = ',';
}

typedef struct figure {
    pt_t *v; /* the figure's rows, one per (variant, size), sorted */
    size_t n;
    size_refs_t *refs;
    size_t nrefs, minb, maxb;
    char base[600], title[600], env[300]; /* env: a second title line */
    const families_t *fam;
    const char *dir;
} figure_t;

/* One detail figure: every variant of the implementation [s, e), plus the floors. */
static int write_detail(const figure_t *g, pt_t *s, pt_t *e, pt_t *floors, size_t nfloor, pt_t *tmp)
{
    char base[800], impl[128], common[512] = "", title[1200], label[512];
    safe_name(impl, sizeof impl, (*s)->impl);
    snprintf(base, sizeof base, "%s__%s", g->base, impl);
    /* Collect the shared items first: they go into the title. */
    for (pt_t *q = s; q < e; q++)
        short_params(s, e, (*q)->params, label, sizeof label, common, sizeof common);
    for (char *c = common; *c; c++)
        if (*c == ' ')
            *c = ',';
    snprintf(title, sizeof title, "%s: %s variants%s%s", g->title, (*s)->impl, *common ? "; all with " : "", common);
    manifest_t *m = malloc(sizeof *m);
    if (!m || manifest_open(m, g->dir, base, title, g->env, *s)) {
        free(m);
        return -1;
    }
    int bad = 0;
    size_t k = 0;
    for (pt_t *q = s; q < e && !bad; k++) {
        pt_t *qe = q;
        while (qe < e && cmp_variant(*q, *qe) == 0)
            qe++;
        short_params(s, e, (*q)->params, label, sizeof label, NULL, 0);
        char lab[600];
        snprintf(lab, sizeof lab, "%s%s%s", *label ? label : "(defaults)", *(*q)->fusion ? ", " : "", (*q)->fusion);
        int dt = strcmp((*q)->fusion, "unfused") == 0 ? 2 : k >= NELEM(variant_colors) ? 4 : 1;
        bad = write_series(m, lab, variant_colors[k % NELEM(variant_colors)], dt, (*q)->role, q, (size_t)(qe - q),
                           g->refs, g->nrefs);
        q = qe;
    }
    /* Floors: the same series as in the overview. */
    size_t floor_k = 0;
    for (pt_t *q = floors; q < floors + nfloor && !bad && floor_k < NELEM(floor_colors); floor_k++) {
        pt_t *qe = q;
        while (qe < floors + nfloor && strcmp((*q)->impl, (*qe)->impl) == 0)
            qe++;
        size_t n = fastest_per_size(q, qe, tmp);
        snprintf(label, sizeof label, "%s (floor)", (*q)->impl);
        bad = write_series(m, label, floor_colors[floor_k], 2 + 2 * (int)floor_k, ARB_ROLE_REFERENCE, tmp, n, g->refs,
                           g->nrefs);
        q = qe;
    }
    fprintf(m->f, "key_below = 1\nkey_rows = %zu\n", (m->nser + 1) / 2); /* two columns */
    bad |= manifest_close(m, g->minb, g->maxb, "variants");
    free(m);
    return bad ? -1 : 0;
}

/* The NCCL_* settings every row of the figure ran with (its `env` items), space-separated:
 * a figure measured under NCCL_P2P_DISABLE=1 says so in its title. */
static void nccl_env(pt_t *v, size_t n, char *out, size_t len)
{
    out[0] = '\0';
    for (const char *p = v[0]->env; *p;) {
        size_t l = strcspn(p, ";");
        int everywhere = strncmp(p, "NCCL_", 5) == 0;
        for (size_t i = 1; i < n && everywhere; i++) {
            const char *q = strstr(v[i]->env, "NCCL_");
            everywhere = 0;
            for (; q && !everywhere; q = strstr(q + 1, "NCCL_"))
                everywhere = (q == v[i]->env || q[-1] == ';') && strncmp(q, p, l) == 0 && (q[l] == ';' || !q[l]);
        }
        if (everywhere && strlen(out) + l + 2 < len)
            snprintf(out + strlen(out), len - strlen(out), "%s%.*s", *out ? " " : "", (int)l, p);
        p += l + (p[l] == ';');
    }
}

static int write_figure(figure_t *g)
{
    pt_t *v = g->v, f = v[0];
    char a[128], b[128], c[128], d[128];
    safe_name(a, sizeof a, f->fabric);
    safe_name(b, sizeof b, f->dtype);
    safe_name(c, sizeof c, f->op);
    safe_name(d, sizeof d, f->mode);
    snprintf(g->base, sizeof g->base, "%s_r%d_n%d_%s_%s_%s", a, f->ranks, f->nodes, b, c, d);
    nccl_env(v, g->n, g->env, sizeof g->env);
    snprintf(g->title, sizeof g->title, "%s, %d ranks, %d node%s, %s %s, %s mode", f->fabric, f->ranks, f->nodes,
             f->nodes == 1 ? "" : "s", f->dtype, f->op, f->mode);
    /* Floors and baselines per size, from every row of the figure. */
    g->refs = calloc(g->n + 1, sizeof *g->refs);
    pt_t *tmp = calloc(g->n + 1, sizeof *tmp), *floors = calloc(g->n + 1, sizeof *floors);
    if (!g->refs || !tmp || !floors) {
        free(tmp);
        free(floors);
        return -1;
    }
    g->minb = SIZE_MAX, g->maxb = 0;
    size_t nfloor = 0;
    for (size_t i = 0; i < g->n; i++) {
        size_t k = 0;
        while (k < g->nrefs && g->refs[k].bytes != v[i]->bytes)
            k++;
        if (k == g->nrefs)
            g->refs[g->nrefs++].bytes = v[i]->bytes;
        arb_refs_add(&g->refs[k].refs, v[i]->role, v[i]->pass, v[i]->median_us, v[i]->impl, v[i]->params);
        g->minb = v[i]->bytes < g->minb ? v[i]->bytes : g->minb;
        g->maxb = v[i]->bytes > g->maxb ? v[i]->bytes : g->maxb;
        if (v[i]->role == ARB_ROLE_REFERENCE)
            floors[nfloor++] = v[i];
    }
    /* Implementations (runs of equal impl in v) and floors (at most 2 kept). */
    size_t nimpl = 0, nfloor_impl = 0;
    for (size_t i = 0; i < g->n; i++)
        if (i == 0 || strcmp(v[i]->impl, v[i - 1]->impl) != 0) {
            if (v[i]->role == ARB_ROLE_REFERENCE)
                nfloor_impl++;
            else
                nimpl++;
        }
    if (nfloor_impl > NELEM(floor_colors)) {
        fprintf(stderr, "arb-plotdata: %s: %zu reference floors, drawing the first %zu\n", g->base, nfloor_impl, NELEM(floor_colors));
        nfloor_impl = NELEM(floor_colors);
    }
    size_t room = MAX_OVERVIEW_SERIES - nfloor_impl;
    if (nimpl > room)
        fprintf(stderr, "arb-plotdata: %s: %zu implementations, the overview draws %zu (every one has its detail figure)\n", g->base, nimpl, room);
    int has_baseline = 0;
    for (size_t k = 0; k < g->nrefs; k++)
        has_baseline |= g->refs[k].refs.baseline_us > 0;
    char kinds[64];
    snprintf(kinds, sizeof kinds, "latency%s%s", nimpl ? " busbw" : "", has_baseline && nimpl > 1 ? " speedup" : "");
    manifest_t *m = malloc(sizeof *m);
    int bad = !m || manifest_open(m, g->dir, g->base, g->title, g->env, f);
    size_t drawn = 0, floor_k = 0;
    /* Legend order: the baseline, the candidates, the floors. */
    static const arb_role_t order[] = {ARB_ROLE_BASELINE, ARB_ROLE_CANDIDATE, ARB_ROLE_REFERENCE};
    for (size_t o = 0; o < NELEM(order); o++)
        for (size_t i = 0, j = 0; i < g->n && !bad; i = j) {
            while (j < g->n && strcmp(v[i]->impl, v[j]->impl) == 0)
                j++;
            if (v[i]->role != order[o])
                continue;
            size_t n = fastest_per_size(v + i, v + j, tmp);
            size_t fused = 0, unfused = 0;
            for (size_t k = 0; k < n; k++)
                fused += strcmp(tmp[k]->fusion, "fused") == 0, unfused += strcmp(tmp[k]->fusion, "unfused") == 0;
            char label[256];
            arb_role_t role = v[i]->role;
            snprintf(label, sizeof label, "%s%s%s", v[i]->impl,
                     role == ARB_ROLE_REFERENCE ? " (floor)" : role == ARB_ROLE_BASELINE ? " (baseline)" : "",
                     fused && unfused ? ", fused|unfused" : fused ? ", fused" : unfused ? ", unfused" : "");
            if (role == ARB_ROLE_REFERENCE) {
                if (floor_k < nfloor_impl)
                    bad = write_series(m, label, floor_colors[floor_k], 2 + 2 * (int)floor_k, role, tmp, n, g->refs, g->nrefs);
                floor_k++;
            } else {
                if (drawn < room)
                    bad = write_series(m, label, family_color(g->fam, v[i]->impl, role), 1, role, tmp, n, g->refs, g->nrefs);
                drawn++;
                if (!bad)
                    bad = write_detail(g, v + i, v + j, floors, nfloor, tmp); /* tmp is free again */
        }
        }
    if (m && m->f)
        bad |= manifest_close(m, g->minb, g->maxb, kinds);
    free(m);
    free(tmp);
    free(floors);
    free(g->refs);
    g->refs = NULL;
    g->nrefs = 0;
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: arb-plotdata RESULTS.csv... OUTDIR (expected at least one results file and an output directory)\n");
        return 2;
    }
    const char *out = argv[argc - 1];
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/data", out);
    if ((mkdir(out, 0777) && errno != EEXIST) || (mkdir(dir, 0777) && errno != EEXIST)) {
        fprintf(stderr, "arb-plotdata: %s: cannot create (%s)\n", dir, strerror(errno));
        return 2;
    }
    arb_pointset_t ps = {0};
    char err[1024];
    int rc = 2;
    for (int i = 1; i < argc - 1; i++)
        if (arb_points_load(&ps, argv[i], err, sizeof err)) {
            fprintf(stderr, "arb-plotdata: %s\n", err);
            goto err_free_points;
        }
    pt_t *v = malloc((ps.n + 1) * sizeof *v);
    const char **names = malloc((ps.n + 1) * sizeof *names);
    if (!v || !names)
        goto err_free_list;
    size_t n = 0, nn = 0;
    for (size_t i = 0; i < ps.n; i++)
        if (ps.p[i].pass || (ps.p[i].role == ARB_ROLE_REFERENCE && ps.p[i].timed))
            v[n++] = &ps.p[i];
    if (!n) {
        fprintf(stderr, "arb-plotdata: no check=pass rows to plot in the given results files\n");
        goto err_free_list;
    }
    qsort(v, n, sizeof *v, cmp_point);
    size_t u = 0; /* one row per (variant, size): the last one read */
    for (size_t i = 0; i < n; i++) {
        if (u && cmp_variant(v[u - 1], v[i]) == 0 && v[u - 1]->bytes == v[i]->bytes)
            u--;
        v[u++] = v[i];
    }
    n = u;
    /* Colours follow the implementation through every figure: baselines, then by name. */
    for (size_t i = 0; i < n; i++)
        if (v[i]->role == ARB_ROLE_CANDIDATE)
            names[nn++] = v[i]->impl;
    qsort(names, nn, sizeof *names, cmp_str);
    size_t un = 0;
    for (size_t i = 0; i < nn; i++)
        if (!un || strcmp(names[un - 1], names[i]) != 0)
            names[un++] = names[i];
    families_t fam = {names, un};
    rc = 0;
    size_t nfig = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && cmp_fig(v[i], v[j]) == 0)
            j++;
        figure_t g = {.v = v + i, .n = j - i, .fam = &fam, .dir = dir};
        rc = write_figure(&g) ? 1 : 0;
        nfig++;
        i = j;
    }
    if (rc == 0)
        fprintf(stderr, "arb-plotdata: %zu figures from %zu rows in %s\n", nfig, n, dir);
err_free_list:
    free(v);
    free(names);
err_free_points:
    arb_points_free(&ps);
    return rc;
}

