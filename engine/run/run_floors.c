/* SPDX-License-Identifier: MIT */
/* The per-kernel floor table (engine/run/run_floors.h). */
#include "run/run_floors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/outfile.h"
#include "model/engine_opts.h"
#include "model/memplan.h"
#include "run/run_state.h"
#include "run/step.h"

const char *const arb_floor_family_names[ARB_FLOOR_FAMILIES] = {
    "embed", "qkv_a", "mla_prep", "q_b", "absorb", "attend", "combine", "o_proj",
    "site_a", "router", "moe_gate_up", "moe_down", "dense_mlp", "site_b", "lm_head", "other"};

arb_floor_family_t arb_floor_family_of(const char *name)
{
    for (int f = 0; f < ARB_FLOOR_OTHER; f++)
        if (name && strcmp(name, arb_floor_family_names[f]) == 0)
            return (arb_floor_family_t)f;
    return ARB_FLOOR_OTHER;
}

void arb_floor_bytes(const arb_model_config_t *c, const arb_shard_t *sh, arb_weight_format_t wf, unsigned T,
                     unsigned pos0, double distinct_experts, arb_floor_bytes_t *o)
{
    memset(o, 0, sizeof *o);
    const double b16 = 2, H = c->hidden_size, rq = c->q_lora_rank, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const double dn = c->qk_nope_head_dim, dv = c->v_head_dim, nh = sh->heads, E = c->n_routed_experts;
    const unsigned L = c->num_hidden_layers, dense = c->first_k_dense_replace < L ? c->first_k_dense_replace : L;
    /* one routed expert's gate + up and down, per element: INT4 packs 0.5 B plus a bf16 scale per group */
    const double elem = wf == ARB_WEIGHTS_INT4 ? 0.5 + b16 / ARB_INT4_GROUP : b16;
    const double ex_gate_up = 2.0 * sh->moe_inter * H * elem, ex_down = (double)sh->moe_inter * H * elem;
    double *p = o->per_layer;
    p[ARB_FLOOR_EMBED] = T * H * b16 + H * b16; /* the rows, input_layernorm[0] */
    p[ARB_FLOOR_QKV_A] = (rq + rkv + dr) * H * b16;
    p[ARB_FLOOR_MLA_PREP] = (rq + rkv) * b16;
    p[ARB_FLOOR_Q_B] = (double)sh->q_b_rows * rq * b16;
    p[ARB_FLOOR_ABSORB] = nh * dn * rkv * b16;
    p[ARB_FLOOR_ATTEND] = ((double)pos0 + T) * (rkv + dr) * b16;
    p[ARB_FLOOR_COMBINE] = nh * dv * rkv * b16;
    p[ARB_FLOOR_O_PROJ] = H * sh->o_cols * b16;
    p[ARB_FLOOR_SITE_A] = H * b16;
    p[ARB_FLOOR_ROUTER] = E * (H * b16 + 4);
    p[ARB_FLOOR_MOE_GATE_UP] = distinct_experts * ex_gate_up + 2.0 * sh->shared_inter * H * b16;
    p[ARB_FLOOR_MOE_DOWN] = distinct_experts * ex_down + (double)sh->shared_inter * H * b16;
    p[ARB_FLOOR_DENSE] = 3.0 * sh->dense_inter * H * b16;
    p[ARB_FLOOR_SITE_B] = H * b16;
    p[ARB_FLOOR_LM_HEAD] = (double)sh->vocab * H * b16;
    for (int f = 0; f < ARB_FLOOR_FAMILIES; f++)
        o->layers[f] = L;
    o->layers[ARB_FLOOR_EMBED] = o->layers[ARB_FLOOR_LM_HEAD] = 1;
    o->layers[ARB_FLOOR_ROUTER] = o->layers[ARB_FLOOR_MOE_GATE_UP] = o->layers[ARB_FLOOR_MOE_DOWN] = L - dense;
    o->layers[ARB_FLOOR_DENSE] = dense;
    o->layers[ARB_FLOOR_OTHER] = 1;
    for (int f = 0; f < ARB_FLOOR_FAMILIES; f++) {
        o->step[f] = p[f] * o->layers[f];
        o->total += o->step[f];
    }
}

int arb_floor_fold(arb_floor_bytes_t *b, arb_floor_family_t into, arb_floor_family_t from)
{
    if (into == from || b->layers[into] != b->layers[from] || !b->layers[into])
        return -1;
    b->per_layer[into] += b->per_layer[from];
    b->step[into] += b->step[from];
    b->per_layer[from] = b->step[from] = 0;
    b->layers[from] = 0;
    return 0;
}

static double ratio(double us, double floor_us)
{
    return isfinite(us) && floor_us > 0 ? us / floor_us : NAN;
}

/* The measured step times per family: names mapped, unknown ones summed into "other". */
static void by_family(const arb_kernel_times_t *k, double us[ARB_FLOOR_FAMILIES], double *sum)
{
    for (int f = 0; f < ARB_FLOOR_FAMILIES; f++)
        us[f] = NAN;
    *sum = k ? 0 : NAN;
    for (unsigned i = 0; k && i < k->n && i < ARB_KERNEL_KINDS_MAX; i++) {
        if (!isfinite(k->us[i]))
            continue;
        arb_floor_family_t f = arb_floor_family_of(k->name[i]);
        us[f] = (isfinite(us[f]) ? us[f] : 0) + k->us[i];
        *sum += k->us[i];
    }
}

void arb_floor_table_fill(arb_floor_table_t *t, const arb_floor_bytes_t *b, unsigned T, unsigned pos0, double experts,
                          double bytes_per_s, const arb_kernel_times_t *chain, const arb_kernel_times_t *graph,
                          const arb_kernel_times_t *eager)
{
    memset(t, 0, sizeof *t);
    t->T = T, t->pos0 = pos0, t->experts = experts, t->bytes_per_s = bytes_per_s;
    t->phase_graph_us = NAN;
    double c[ARB_FLOOR_FAMILIES], g[ARB_FLOOR_FAMILIES], e[ARB_FLOOR_FAMILIES];
    by_family(chain, c, &t->chain_sum_us);
    by_family(graph, g, &t->graph_sum_us);
    by_family(eager, e, &t->eager_sum_us);
    snprintf(t->chain_method, sizeof t->chain_method, "%s", chain ? chain->method : "not measured");
    for (unsigned i = 0; chain && i < chain->nlayers && i < 3; i++) {
        t->chain_layer[i] = chain->layer[i], t->chain_dense[i] = chain->layer_dense[i];
        t->chain_layer_us[i] = chain->layer_us[i];
        t->chain_layers = i + 1;
    }
    snprintf(t->graph_method, sizeof t->graph_method, "%s", graph ? graph->method : "not measured");
    snprintf(t->eager_method, sizeof t->eager_method, "%s", eager ? eager->method : "not measured");
    const double bw = bytes_per_s > 0 ? bytes_per_s : NAN;
    for (int f = 0; f < ARB_FLOOR_FAMILIES; f++) {
        arb_floor_row_t *r = &t->row[f];
        const double n = b->layers[f] ? b->layers[f] : 1;
        r->layers = b->layers[f];
        r->bytes_layer = b->per_layer[f], r->bytes_step = b->step[f];
        r->floor_us = b->per_layer[f] / bw * 1e6;
        r->chain_us = c[f] / n;
        r->chain_ratio = ratio(r->chain_us, r->floor_us);
        r->graph_us = g[f] / n;
        r->eager_us = e[f] / n;
        r->graph_ratio = ratio(r->graph_us, r->floor_us);
        r->eager_ratio = ratio(r->eager_us, r->floor_us);
    }
    arb_floor_row_t *s = &t->step;
    s->layers = 1;
    s->bytes_layer = s->bytes_step = b->total;
    s->floor_us = b->total / bw * 1e6;
    s->chain_us = chain ? chain->step_us : NAN;
    s->chain_ratio = ratio(s->chain_us, s->floor_us);
    s->graph_us = graph ? graph->step_us : NAN;
    s->eager_us = eager ? eager->step_us : NAN;
    s->graph_ratio = ratio(s->graph_us, s->floor_us);
    s->eager_ratio = ratio(s->eager_us, s->floor_us);
}

static void cell(char *b, size_t n, const char *fmt, double v)
{
    if (isfinite(v))
        snprintf(b, n, fmt, v);
    else
        snprintf(b, n, "-");
}

static void print_row(FILE *f, const char *name, const arb_floor_row_t *r)
{
    char fl[16], cu[16], cr[16], gu[16], gr[16], eu[16], er[16];
    cell(fl, sizeof fl, "%.2f", r->floor_us);
    cell(cu, sizeof cu, "%.2f", r->chain_us);
    cell(cr, sizeof cr, "%.2f", r->chain_ratio);
    cell(gu, sizeof gu, "%.2f", r->graph_us);
    cell(gr, sizeof gr, "%.2f", r->graph_ratio);
    cell(eu, sizeof eu, "%.2f", r->eager_us);
    cell(er, sizeof er, "%.2f", r->eager_ratio);
    fprintf(f, "#   %-12s %6u %10.3f %9s %9s %7s %9s %7s %9s %7s\n", name, r->layers, r->bytes_layer / 1e6, fl, cu, cr,
            gu, gr, eu, er);
}

void arb_floor_table_print(FILE *f, const arb_floor_table_t *t)
{
    fprintf(f, "# per-kernel floors, T=%u at P0=%u, %.2f distinct experts per MoE layer, streaming read %.1f GB/s\n", t->T,
            t->pos0, t->experts, t->bytes_per_s / 1e9);
    fprintf(f, "#   chain: %s\n#   graph: %s\n#   eager: %s\n", t->chain_method, t->graph_method, t->eager_method);
    fprintf(f, "#   per layer (embed, lm_head: per step); us\n");
    if (t->note[0])
        fprintf(f, "#   %s\n", t->note);
    fprintf(f, "#   %-12s %6s %10s %9s %9s %7s %9s %7s %9s %7s\n", "family", "layers", "MB/layer", "floor_us", "chain_us",
            "x_floor", "graph_us", "x_floor", "eager_us", "x_floor");
    for (int i = 0; i < ARB_FLOOR_FAMILIES; i++) {
        const arb_floor_row_t *r = &t->row[i];
        if (r->layers == 0 ||
            (i == ARB_FLOOR_OTHER && !isfinite(r->chain_us) && !isfinite(r->graph_us) && !isfinite(r->eager_us)))
            continue;
        print_row(f, arb_floor_family_names[i], r);
    }
    print_row(f, "step", &t->step);
    char cs[16], gs[16], es[16], ph[16];
    cell(cs, sizeof cs, "%.1f", t->chain_sum_us);
    cell(gs, sizeof gs, "%.1f", t->graph_sum_us);
    cell(es, sizeof es, "%.1f", t->eager_sum_us);
    cell(ph, sizeof ph, "%.1f", t->phase_graph_us);
    fprintf(f, "#   families summed: chain %s us, graph %s us, eager %s us; the graph-mode phase's median step %s us\n", cs,
            gs, es, ph);
    for (unsigned i = 0; i < t->chain_layers; i++) {
        char lu[16], fu[16];
        cell(lu, sizeof lu, "%.1f", t->chain_layer_us[i]);
        fprintf(f, "#   chain: layer %u (%s) added %s us", t->chain_layer[i], t->chain_dense[i] ? "dense" : "MoE", lu);
        double fl = 0; /* that layer's bytes at the floor: its families' per-layer floors (NAN: no bandwidth) */
        for (int k = ARB_FLOOR_QKV_A; k < ARB_FLOOR_LM_HEAD; k++) {
            const int moe_only = k == ARB_FLOOR_ROUTER || k == ARB_FLOOR_MOE_GATE_UP || k == ARB_FLOOR_MOE_DOWN;
            if ((k == ARB_FLOOR_DENSE && !t->chain_dense[i]) || (moe_only && t->chain_dense[i]) || !t->row[k].layers)
                continue;
            fl += t->row[k].floor_us;
        }
        cell(fu, sizeof fu, "%.1f", fl);
        fprintf(f, ", its floor %s us\n", fu);
    }
}

void arb_floor_csv_path(const char *results, const char *run_id, char *out, size_t len)
{
    arb_out_side_path(results, "kernels", run_id, ".csv", out, len);
}

/* A field, quoted when it holds a separator, a quote or a line break. */
static int put(FILE *f, const char *s, int last)
{
    int bad = 0;
    if (s && strpbrk(s, ",\"\r\n")) {
        bad |= fputc('"', f) == EOF;
        for (const char *p = s; *p; p++)
            bad |= (*p == '"' && fputc('"', f) == EOF) || fputc(*p, f) == EOF;
        bad |= fputc('"', f) == EOF;
    } else if (s) {
        bad |= fputs(s, f) < 0;
    }
    return bad | (fputc(last ? '\n' : ',', f) == EOF);
}

static const char *num(char *b, size_t n, const char *fmt, double v)
{
    cell(b, n, fmt, v);
    return strcmp(b, "-") ? b : "";
}

#define FLOOR_NCOLS 30
static const char *const floor_cols[FLOOR_NCOLS] = {
    "schema", "run_id", "git_rev", "host", "gpu", "argv", "config", "weights", "impl", "layers", "experts",
    "tp_shape", "context", "tokens", "pos0", "experts_per_layer", "read_gbs", "family", "family_layers",
    "bytes_per_layer", "floor_us", "graph_us", "graph_ratio", "eager_us", "eager_ratio", "graph_method",
    "eager_method", "chain_us", "chain_ratio", "chain_method"};

static int write_row(FILE *f, const arb_floor_csv_info_t *in, const arb_floor_table_t *t, const char *family,
                     const arb_floor_row_t *r)
{
    char b[18][48];
    const char *v[FLOOR_NCOLS] = {"engine-kernels-1", in->run_id, in->git_rev, in->host, in->gpu, in->argv,
                                      in->config, in->weights, in->impl};
    snprintf(b[0], 48, "%u", in->layers), v[9] = b[0];
    snprintf(b[1], 48, "%u", in->experts), v[10] = b[1];
    snprintf(b[2], 48, "%u", in->tp_shape), v[11] = b[2];
    snprintf(b[3], 48, "%u", in->context), v[12] = b[3];
    snprintf(b[4], 48, "%u", t->T), v[13] = b[4];
    snprintf(b[5], 48, "%u", t->pos0), v[14] = b[5];
    v[15] = num(b[6], 48, "%.3f", t->experts);
    v[16] = num(b[7], 48, "%.1f", t->bytes_per_s / 1e9);
    v[17] = family;
    snprintf(b[8], 48, "%u", r->layers), v[18] = b[8];
    v[19] = num(b[9], 48, "%.0f", r->bytes_layer);
    v[20] = num(b[10], 48, "%.4f", r->floor_us);
    v[21] = num(b[11], 48, "%.4f", r->graph_us);
    v[22] = num(b[12], 48, "%.4f", r->graph_ratio);
    v[23] = num(b[13], 48, "%.4f", r->eager_us);
    v[24] = num(b[14], 48, "%.4f", r->eager_ratio);
    v[25] = t->graph_method, v[26] = t->eager_method;
    v[27] = num(b[15], 48, "%.4f", r->chain_us);
    v[28] = num(b[16], 48, "%.4f", r->chain_ratio);
    v[29] = t->chain_method;
    int bad = 0;
    for (int i = 0; i < FLOOR_NCOLS; i++)
        bad |= put(f, v[i] ? v[i] : "", i == FLOOR_NCOLS - 1);
    return bad;
}

int arb_floor_write_csv(const char *path, const arb_floor_csv_info_t *info, const arb_floor_table_t *t, unsigned n,
                        char *err, size_t err_len)
{
    arb_outfile_t of;
    FILE *f = arb_outfile_open(&of, "the per-kernel table", path, err, err_len);
    if (!f)
        return -1;
    int bad = 0;
    for (int i = 0; i < FLOOR_NCOLS; i++)
        bad |= put(f, floor_cols[i], i == FLOOR_NCOLS - 1);
    for (unsigned k = 0; k < n; k++) {
        for (int i = 0; i < ARB_FLOOR_FAMILIES; i++)
            if (t[k].row[i].layers && (i != ARB_FLOOR_OTHER || isfinite(t[k].row[i].chain_us) ||
                                       isfinite(t[k].row[i].graph_us) || isfinite(t[k].row[i].eager_us)))
                bad |= write_row(f, info, &t[k], arb_floor_family_names[i], &t[k].row[i]);
        bad |= write_row(f, info, &t[k], "step", &t[k].step);
    }
    if (bad || ferror(f)) {
        arb_outfile_discard(&of);
        snprintf(err, err_len, "%s: cannot write", path);
        return -1;
    }
    return arb_outfile_commit(&of, err, err_len);
}

/* ---- the driver's call ---- */

/* One backend measurement of kind `graph`, every rank's times maxed; 0 when measured, else -1
 * with "not measured: <why>" in failed (the table's method for that column). */
static int measure(arb_engine_run_t *r, void *model, const uint32_t *tokens, unsigned T, unsigned pos0, int graph,
                   arb_kernel_times_t *k, char *failed, size_t failed_len)
{
    char why[512] = "";
    arb_status_t st = r->be->kernel_times(model, tokens, T, pos0, graph, r->m->nranks > 1, k, why, sizeof why);
    if (arb_run_agree(r, st, why, sizeof why) != ARB_OK) {
        if (r->m->rank == 0)
            fprintf(stderr, "# per-kernel floors at T=%u (%s): %s\n", T, graph == 2 ? "chain" : graph ? "graph" : "eager",
                    why);
        snprintf(failed, failed_len, "not measured: %s", why);
        return -1;
    }
    /* not measured (NAN) travels as -inf, which MPI_MAX orders */
    double v[ARB_KERNEL_KINDS_MAX + 1];
    for (unsigned i = 0; i <= k->n; i++) {
        double x = i < k->n ? k->us[i] : k->step_us;
        v[i] = isnan(x) ? -INFINITY : x;
    }
    MPI_Allreduce(MPI_IN_PLACE, v, (int)k->n + 1, MPI_DOUBLE, MPI_MAX, r->m->world);
    for (unsigned i = 0; i <= k->n; i++)
        *(i < k->n ? &k->us[i] : &k->step_us) = isinf(v[i]) && v[i] < 0 ? NAN : v[i];
    return 0;
}

static int one_table(arb_stepper_t *s, const uint32_t *tokens, unsigned T, int phase, int graph_ran,
                     arb_floor_table_t *t)
{
    arb_engine_run_t *r = s->r;
    arb_runcfg_t *c = s->c;
    void *model = s->model;
    const unsigned pos0 = r->o->context;
    char why[512] = "";
    /* one eager step on these inputs: the routing whose experts the floors count */
    arb_step_t step;
    s->mode = ARB_MODE_EAGER;
    arb_status_t st = arb_step_once(s, tokens, T, pos0, ARB_STEP_BYTES, &step, why, sizeof why);
    const double experts = step.experts;
    if (st != ARB_OK) {
        if (r->m->rank == 0)
            fprintf(stderr, "# per-kernel floors at T=%u: %s\n", T, why);
        return -1;
    }
    arb_kernel_times_t kc, kg, ke;
    char fc[200] = "", fg[200] = "", fe[200] = "";
    /* the chain replays windows of one rank's step: a collective's peers would not follow */
    const int one_rank = r->m->nranks == 1;
    int have_c = graph_ran && one_rank && measure(r, model, tokens, T, pos0, 2, &kc, fc, sizeof fc) == 0;
    int have_g = graph_ran && measure(r, model, tokens, T, pos0, 1, &kg, fg, sizeof fg) == 0;
    int have_e = measure(r, model, tokens, T, pos0, 0, &ke, fe, sizeof fe) == 0;
    arb_floor_bytes_t b;
    arb_floor_bytes(&r->cfg, &r->s.shard, r->o->weights, T, pos0, experts, &b);
    /* q_b and the absorption in one launch (run.c resolved --fuse for this model): its time is
     * filed under q_b, so absorb's bytes are counted there */
    const int fused = (r->o->fuse & ARB_FUSE_QB_ABSORB) != 0;
    if (fused)
        arb_floor_fold(&b, ARB_FLOOR_Q_B, ARB_FLOOR_ABSORB);
    arb_floor_table_fill(t, &b, T, pos0, experts, r->bandwidth, have_c ? &kc : NULL, have_g ? &kg : NULL,
                         have_e ? &ke : NULL);
    if (fused)
        snprintf(t->note, sizeof t->note, "q_b: q_b and the absorption in one launch (--fuse qb_absorb), their bytes together");
    if (fc[0]) /* a measurement that failed says why in its method */
        snprintf(t->chain_method, sizeof t->chain_method, "%s", fc);
    if (fg[0])
        snprintf(t->graph_method, sizeof t->graph_method, "%s", fg);
    if (fe[0])
        snprintf(t->eager_method, sizeof t->eager_method, "%s", fe);
    if (!graph_ran) {
        snprintf(t->graph_method, sizeof t->graph_method, "not measured: graph mode did not run");
        snprintf(t->chain_method, sizeof t->chain_method, "not measured: graph mode did not run");
    } else if (!one_rank) {
        snprintf(t->chain_method, sizeof t->chain_method, "not measured: %d ranks (one rank's windows alone)",
                 r->m->nranks);
    }
    const arb_phase_result_t *pg = &c->res[ARB_MODE_GRAPH][phase];
    t->phase_graph_us = pg->ran ? pg->st.median : NAN;
    return 0;
}

void arb_run_floors(arb_stepper_t *s)
{
    arb_engine_run_t *r = s->r;
    arb_runcfg_t *c = s->c;
    if (!r->be->kernel_times) {
        if (r->m->rank == 0)
            printf("# per-kernel floors: not available on the %s backend (no kernel profile)\n", r->be->name);
        return;
    }
    int mode = -1;
    for (int m = 0; m < ARB_MODE_COUNT && mode < 0; m++)
        if (c->res[m][ARB_PHASE_DECODE].ran)
            mode = m;
    if (mode < 0)
        return;
    const uint32_t *chain = c->res[mode][ARB_PHASE_DECODE].tokens; /* S + k + 1 greedy tokens */
    const int graph_ran = c->res[ARB_MODE_GRAPH][ARB_PHASE_DECODE].ran;
    const unsigned Ts[2] = {1, r->o->spec_k + 1};
    arb_floor_table_t t[2];
    unsigned n = 0;
    for (int i = 0; i < 2; i++)
        if (one_table(s, chain, Ts[i], i ? ARB_PHASE_VERIFY : ARB_PHASE_DECODE, graph_ran, &t[n]) == 0)
            n++;
    if (r->m->rank != 0 || n == 0)
        return;
    for (unsigned i = 0; i < n; i++)
        arb_floor_table_print(stdout, &t[i]);
    const arb_floor_csv_info_t info = {
        .run_id = r->meta.run_id, .git_rev = r->meta.git_rev, .host = r->meta.host, .gpu = r->meta.gpu,
        .argv = r->meta.argv, .config = r->cfg.name, .weights = r->o->weights == ARB_WEIGHTS_INT4 ? "int4" : "bf16",
        .impl = c->spec.name, .tp_shape = r->s.tp_shape, .context = r->o->context,
        .layers = r->cfg.num_hidden_layers, .experts = r->cfg.n_routed_experts};
    char path[4200], err[4400];
    arb_floor_csv_path(r->out, r->meta.run_id, path, sizeof path);
    if (arb_floor_write_csv(path, &info, t, n, err, sizeof err) != 0)
        fprintf(stderr, "# per-kernel floors: %s\n", err);
    else
        printf("# per-kernel floors: %s\n", path);
    fflush(stdout);
}
