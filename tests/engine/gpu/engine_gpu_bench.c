/* SPDX-License-Identifier: MIT */
/*
 * One rank's GPU work on one GPU, measured against the step-time targets (no call-site
 * instance: the residual + RMSNorm kernel alone stands in for `noop` at every site):
 * chunked prefill of --context tokens, then --steps decode steps (T = 1) and verify
 * steps (T = spec_k + 1), each shape captured once as a CUDA graph and replayed; the
 * bytes each step must read (the experts it selected, attention, cache, lm_head) over
 * the streaming-read bandwidth measured here is its HBM floor; the MoE block of a layer
 * against a per-expert cuBLAS loop. Prints key=value lines. Not a test.
 *
 *   engine_gpu_bench [--config kimi-k2] [--weights int4|bf16] [--tp-shape 8] [--layers L]
 *                    [--experts E] [--context 4096] [--steps 32] [--spec-k 2] [--eager]
 *                    [--moe-t LIST] [--fuse LIST] [--l2-side LIST: both as arbench engine's, with
 *                    its defaults] [--moe-early off|on|l2|spec|spec-sync]
 *                    [--moe-order auto|shared-first|routed-first|spread] [--timeline PREFIX]
 *                    [--attn-wide-from T: as arbench engine's, 1..8; default never]
 *
 * --moe-t LIST (the sweep's list grammar, e.g. 1:8,12,16; T up to ARB_GPU_MOE_MAX_T): the MoE
 * block alone at each T over a synthetic selection (each token k distinct experts drawn
 * uniformly, fixed seed; no step runs past ARB_GPU_MAX_T, so the router's choice is not
 * available there), against the cuBLAS loop, then its spread of TB/s over T <= 8 (issue 22:
 * flat within 20%).
 *
 * --timeline PREFIX (a build configured with -Dengine_timeline=true, else refused): after the
 * timed steps, one more decode and one verify step, each replayed from its graph with every
 * instrumented kernel's CTAs recording their start, PDL-wait return and end (engine/gpu/kernels/
 * timeline.cuh), written to PREFIX-T1.csv and PREFIX-T<spec_k+1>.csv (written whole, then
 * renamed); ci/timeline.py summarizes them. The stamps cost time of their own: time steps in a
 * build without them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "analysis/resample.h"
#include "base/sizes.h"
#include "model/config.h"
#include "gpu/gpu_dims.h"
#include "gpu/gpu_model.h"
#include "gpu/kernels/qb_fit.h"
#include "model/engine_opts.h"
#include "model/rope.h"
#include "model/wgen.h"

static char why[1024];

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "engine_gpu_bench: " __VA_ARGS__);                                                            \
        fputc('\n', stderr);                                                                                           \
        exit(1);                                                                                                       \
    } while (0)
#define CK(st)                                                                                                         \
    do {                                                                                                               \
        if ((st) != ARB_OK)                                                                                            \
            DIE("%s", why);                                                                                            \
    } while (0)
#define CUDA(call)                                                                                                     \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess)                                                                                         \
            DIE("%s: %s", #call, cudaGetErrorString(e_));                                                              \
    } while (0)

typedef struct run {
    arb_gpu_model_t *m;
    cudaStream_t st;
    cudaGraphExec_t graph[ARB_GPU_MAX_T + 1]; /* per T, captured on first use */
    int eager;
    unsigned pos;     /* next position */
    uint32_t next;    /* greedy token */
    int32_t *experts; /* [layers x MAX_T x k] */
    unsigned layers, k;
} run_t;

/* One step of T tokens at r->pos (graph replay unless eager); returns its time in ms. */
static double step(run_t *r, const uint32_t *tok, unsigned T)
{
    cudaEvent_t a, b;
    CUDA(cudaEventCreate(&a));
    CUDA(cudaEventCreate(&b));
    CK(arb_gpu_model_set_input(r->m, tok, T, r->pos, r->st, why, sizeof why));
    if (!r->eager && !r->graph[T]) {
        cudaGraph_t g;
        CUDA(cudaStreamBeginCapture(r->st, cudaStreamCaptureModeThreadLocal));
        arb_status_t s = arb_gpu_model_step(r->m, T, r->st, why, sizeof why);
        CUDA(cudaStreamEndCapture(r->st, &g));
        CK(s);
        CUDA(cudaGraphInstantiate(&r->graph[T], g, 0));
        CUDA(cudaGraphDestroy(g));
    }
    CUDA(cudaEventRecord(a, r->st));
    if (r->eager)
        CK(arb_gpu_model_step(r->m, T, r->st, why, sizeof why));
    else
        CUDA(cudaGraphLaunch(r->graph[T], r->st));
    CUDA(cudaEventRecord(b, r->st));
    CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CUDA(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a), cudaEventDestroy(b);
    float bl[ARB_GPU_MAX_T];
    uint32_t bi[ARB_GPU_MAX_T];
    CK(arb_gpu_model_read_argmax(r->m, T, bl, bi, why, sizeof why));
    CK(arb_gpu_model_read_experts(r->m, T, r->experts, why, sizeof why));
    for (unsigned t = 0; t < T; t++)
        if (!isfinite(bl[t]))
            DIE("step T %u at %u: logit of token %u is %g", T, r->pos, t, bl[t]);
    r->next = bi[T - 1];
    r->pos += T;
    return ms;
}

/* S steps of T tokens: median/p10/p90 time, median floor (bytes / bw). */
static void measure(run_t *r, unsigned T, int S, double bw, const char *name)
{
    double *t = malloc(sizeof(double) * S), *fl = malloc(sizeof(double) * S), *by = malloc(sizeof(double) * S);
    for (int i = 0; i < S; i++) {
        uint32_t tok[ARB_GPU_MAX_T];
        tok[0] = r->next;
        for (unsigned j = 1; j < T; j++) /* draft tokens: synthetic, as the driver's accept draws */
            tok[j] = arb_wgen_below(1, ARB_W_PROMPT, 1, r->pos + j, 1000);
        const unsigned p0 = r->pos;
        t[i] = step(r, tok, T);
        arb_gpu_step_bytes_t sb;
        arb_gpu_model_step_bytes(r->m, T, p0, r->experts, &sb);
        by[i] = sb.total;
        fl[i] = sb.total / bw * 1e3;
        if (i == S - 1)
            printf("%s_bytes_last: attention=%.1fMB kv_cache=%.1fMB dense=%.1fMB shared=%.1fMB routed=%.1fMB router=%.1fMB "
                   "lm_head=%.1fMB other=%.1fMB\n",
                   name, sb.attention / 1e6, sb.kv_cache / 1e6, sb.dense_mlp / 1e6, sb.shared_expert / 1e6,
                   sb.routed_experts / 1e6, sb.router / 1e6, sb.lm_head / 1e6, sb.other / 1e6);
    }
    const double med = pct(t, S, 0.5), p10 = pct(t, S, 0.1), p90 = pct(t, S, 0.9), floor_ms = pct(fl, S, 0.5);
    printf("%s_T=%u steps=%d mode=%s\n", name, T, S, r->eager ? "eager" : "graph");
    printf("%s_ms_median=%.4f p10=%.4f p90=%.4f\n", name, med, p10, p90);
    printf("%s_bytes_median=%.4g floor_ms=%.4f ratio_to_floor=%.3f achieved_TBps=%.3f\n", name, pct(by, S, 0.5),
           floor_ms, med / floor_ms, pct(by, S, 0.5) / (med * 1e-3) / 1e12);
    free(t), free(fl), free(by);
}

/* Where one eager step's time goes (the last step's inputs again: the same cache rows). */
static void profile(run_t *r, unsigned T, const char *name)
{
    double us[ARB_GPU_PROF_KINDS], total = 0;
    CK(arb_gpu_model_profile(r->m, T, r->st, us, why, sizeof why));
    printf("%s_profile_us (eager, events between launches):", name);
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++) {
        printf(" %s=%.1f", arb_gpu_prof_name(k), us[k]);
        total += isfinite(us[k]) ? us[k] : 0; /* nan: no launch of its own */
    }
    printf(" total=%.1f\n", total);
}

/* k distinct experts of E per token, uniform (the library's seeded splitmix64), every layer. */
static void uniform_selection(unsigned layers, unsigned T, unsigned k, unsigned E, int32_t *out)
{
    if (k > E)
        DIE("--moe-t: %u distinct experts a token out of %u", k, E);
    arb_rng_t rng;
    arb_rng_seed(&rng, 0x9e3779b97f4a7c15ull * (T + 1));
    for (unsigned i = 0; i < layers * T; i++)
        for (unsigned j = 0; j < k; j++) {
            int32_t e;
            int dup;
            do {
                e = (int32_t)arb_rng_below(&rng, E);
                dup = 0;
                for (unsigned q = 0; q < j; q++)
                    dup |= out[(size_t)i * k + q] == e;
            } while (dup);
            out[(size_t)i * k + j] = e;
        }
}

/* The MoE block alone at each T of the list over uniform selections, and the TB/s spread over T <= 8. */
static void moe_sweep(run_t *r, const unsigned *Ts, size_t n, unsigned E)
{
    double lo = 0, hi = 0;
    unsigned tlo = 0, thi = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned T = Ts[i];
        int32_t *sel = malloc(sizeof(int32_t) * r->layers * T * r->k);
        uniform_selection(r->layers, T, r->k, E, sel);
        arb_gpu_moe_bench_t mb;
        CK(arb_gpu_moe_bench_sel(r->m, T, sel, 5, r->st, &mb, why, sizeof why));
        free(sel);
        const double tbps = mb.ours_bytes / (mb.ours_us * 1e-6) / 1e12;
        printf("moe_sel_T=%u routing=uniform layers_timed=%d/%d experts_per_layer=%.2f ours_us=%.2f ours_TBps=%.3f "
               "cublas_us=%.2f cublas_TBps=%.3f speedup=%.2f\n",
               T, mb.layers_timed, mb.layers_total, mb.experts_per_layer, mb.ours_us, tbps, mb.cublas_us,
               mb.cublas_bytes / (mb.cublas_us * 1e-6) / 1e12, mb.cublas_us / mb.ours_us);
        if (T <= ARB_GPU_MAX_T) {
            if (!tlo || tbps < lo)
                lo = tbps, tlo = T;
            if (!thi || tbps > hi)
                hi = tbps, thi = T;
        }
    }
    if (tlo && tlo != thi)
        printf("moe_flatness T<=%d: min %.3f TB/s (T=%u) max %.3f TB/s (T=%u) spread=%.1f%% of max (target: within 20%%)\n",
               ARB_GPU_MAX_T, lo, tlo, hi, thi, 100.0 * (hi - lo) / hi);
}

/* One step of T tokens (its graph replayed) recorded into PREFIX-T<T>.csv (--timeline). */
static void timeline_step(run_t *r, unsigned T, const char *prefix)
{
    /* CTAs: ~2000 a layer at Kimi-K2 (18 MB of 72-byte records on a card the shard nearly fills) */
    const size_t cap = (size_t)1 << 18;
    arb_tl_rec_t *rec = malloc(cap * sizeof *rec);
    if (!rec)
        DIE("--timeline: no host memory for %zu records", cap);
    uint32_t tok[ARB_GPU_MAX_T];
    for (unsigned t = 0; t < T; t++)
        tok[t] = t ? arb_wgen_below(1, ARB_W_PROMPT, 1, r->pos + t, 1000) : r->next; /* as measure()'s drafts */
    step(r, tok, T); /* the graph exists and is warm: measure() ran this T */
    size_t n = 0, dropped = 0;
    unsigned reissues = 0;
    CK(arb_gpu_moe_reissues(&reissues, why, sizeof why)); /* cleared: this step's alone below */
    CK(arb_gpu_timeline_begin(cap, why, sizeof why));
    step(r, tok, T);
    CK(arb_gpu_timeline_end(rec, cap, &n, &dropped, why, sizeof why));
    CK(arb_gpu_moe_reissues(&reissues, why, sizeof why));
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s-T%u.csv", prefix, T);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        DIE("--timeline: cannot write %s", tmp);
    /* the global timer from the step's first start, each SM's cycles from that SM's first start
     * (short numbers: ~130 k rows a step come back from a device machine); a wait that was not
     * stamped (a kernel that does not wait) left empty */
    uint64_t g_base = UINT64_MAX, c_base[1024];
    for (size_t j = 0; j < 1024; j++)
        c_base[j] = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (rec[i].sm >= 1024)
            DIE("--timeline: SM id %u (expected < 1024)", rec[i].sm);
        g_base = rec[i].g0 < g_base ? rec[i].g0 : g_base;
        c_base[rec[i].sm] = rec[i].c0 < c_base[rec[i].sm] ? rec[i].c0 : c_base[rec[i].sm];
    }
    fprintf(f, "tag,launch,block,sm,g0,gw,g1,c0,cw,c1\n");
    for (size_t i = 0; i < n; i++) {
        const arb_tl_rec_t *q = &rec[i];
        const unsigned long long cb = c_base[q->sm];
        char gw[24] = "", cw[24] = "";
        if (q->gw) {
            snprintf(gw, sizeof gw, "%llu", (unsigned long long)(q->gw - g_base));
            snprintf(cw, sizeof cw, "%llu", (unsigned long long)(q->cw - cb));
        }
        fprintf(f, "%s,%u,%u,%u,%llu,%s,%llu,%llu,%s,%llu\n", arb_tl_tag_name(q->tag), q->launch, q->block, q->sm,
                (unsigned long long)(q->g0 - g_base), gw, (unsigned long long)(q->g1 - g_base),
                (unsigned long long)(q->c0 - cb), cw, (unsigned long long)(q->c1 - cb));
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        DIE("--timeline: writing %s failed", path);
    printf("timeline_T=%u records=%zu dropped=%zu file=%s moe_down_reissues=%u\n", T, n, dropped, path, reissues);
    free(rec);
    if (dropped)
        DIE("--timeline: %zu CTAs past the room of %zu records (T = %u)", dropped, cap, T);
}

int main(int argc, char **argv)
{
    const char *config = "kimi-k2";
    arb_gpu_wformat_t wf = ARB_GPU_INT4;
    unsigned K = 8, context = 4096, spec_k = 2, layers = 0, experts = 0;
    int S = 32, eager = 0, fuse_given = 0;
    unsigned fuse = ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB; /* the engine's default: where the shapes fit */
    unsigned side = ARB_L2_SIDE_ROUTER; /* the engine's default in its launches form */
    int moe_early = ARB_ENGINE_DEFAULT_MOE_EARLY, moe_order = 0; /* the engine's defaults */
    const char *timeline = NULL;
    unsigned attn_wide_from = 0; /* the engine's default: never */
    unsigned moe_ts[ARB_GPU_MOE_MAX_T];
    size_t n_moe_ts = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--eager")) {
            eager = 1;
            continue;
        }
        if (!v)
            DIE("%s needs a value (see the header of engine_gpu_bench.c)", a);
        i++;
        if (!strcmp(a, "--config"))
            config = v;
        else if (!strcmp(a, "--weights") && (!strcmp(v, "int4") || !strcmp(v, "bf16")))
            wf = !strcmp(v, "int4") ? ARB_GPU_INT4 : ARB_GPU_BF16;
        else if (!strcmp(a, "--tp-shape"))
            K = (unsigned)atoi(v);
        else if (!strcmp(a, "--context"))
            context = (unsigned)atoi(v);
        else if (!strcmp(a, "--steps"))
            S = atoi(v);
        else if (!strcmp(a, "--spec-k"))
            spec_k = (unsigned)atoi(v);
        else if (!strcmp(a, "--layers"))
            layers = (unsigned)atoi(v);
        else if (!strcmp(a, "--experts"))
            experts = (unsigned)atoi(v);
        else if (!strcmp(a, "--fuse")) { /* the engine's own parser: the same names and messages */
            if (arb_engine_opts_bits_parse(ARB_BITS_FUSE, v, &fuse, why, sizeof why) != 0)
                DIE("%s", why);
            fuse_given = 1;
        } else if (!strcmp(a, "--l2-side")) {
            if (arb_engine_opts_bits_parse(ARB_BITS_L2_SIDE, v, &side, why, sizeof why) != 0)
                DIE("%s", why);
        } else if (!strcmp(a, "--moe-early")) {
            if (arb_engine_opts_moe_early(v, &moe_early, why, sizeof why) != 0) /* the engine's names (on, l2 */
                DIE("%s", why); /* timed here though withdrawn there) */
        } else if (!strcmp(a, "--moe-order")) { /* the engine's own parser: the same names and messages */
            if (arb_engine_opts_moe_order(v, &moe_order, why, sizeof why) != 0)
                DIE("%s", why);
        } else if (!strcmp(a, "--attn-wide-from")) { /* the engine's own parser: the same range and message */
            if (arb_engine_opts_attn_wide_from(v, &attn_wide_from, why, sizeof why) != 0)
                DIE("%s", why);
        } else if (!strcmp(a, "--timeline")) {
            if (!*v)
                DIE("--timeline: an empty prefix (expected a path prefix for PREFIX-T1.csv)");
            timeline = v;
        } else if (!strcmp(a, "--moe-t")) {
            char e[256];
            if (arb_parse_uint_list(v, moe_ts, ARB_GPU_MOE_MAX_T, &n_moe_ts, e, sizeof e) != ARB_OK)
                DIE("--moe-t %s: %s", v, e);
            for (size_t j = 0; j < n_moe_ts; j++)
                if (moe_ts[j] < 1 || moe_ts[j] > ARB_GPU_MOE_MAX_T)
                    DIE("--moe-t %s: T %u, expected 1 .. %d", v, moe_ts[j], ARB_GPU_MOE_MAX_T);
        } else
            DIE("unknown option or value: %s %s (accepted: --config --weights int4|bf16 --tp-shape --layers --experts "
                "--context --steps --spec-k --eager --moe-t --fuse LIST --l2-side LIST --moe-early off|on|l2|spec|spec-sync "
                "--moe-order auto|shared-first|routed-first|spread --timeline PREFIX --attn-wide-from T)",
                a, v);
    }
    if (timeline && !arb_tl_built())
        DIE("--timeline: this build records no timeline (configure a build with meson -Dengine_timeline=true)");
    if (timeline && eager)
        DIE("--timeline with --eager: the timeline replays the steps' graphs (leave --eager out)");
    if (S < 1 || spec_k + 1 > ARB_GPU_MAX_T || context < ARB_GPU_MAX_T)
        DIE("--steps >= 1, --spec-k <= %d and --context >= %d", ARB_GPU_MAX_T - 1, ARB_GPU_MAX_T);
    arb_model_config_t cfg;
    arb_rope_t rope;
    CK(arb_config_load(config, &cfg, why, sizeof why));
    arb_config_overrides_t ov = {.layers = layers, .experts = experts};
    CK(arb_config_override(&cfg, &ov, why, sizeof why));
    CK(arb_rope_make(&cfg, &rope, why, sizeof why));
    const unsigned Tv = spec_k + 1,
                   capacity = context + (unsigned)S * (1 + Tv) + ARB_GPU_MAX_T + (timeline ? 2 * (1 + Tv) : 0);
    arb_gpu_model_opts_t o = {.format = wf, .seed = 1, .max_tokens = ARB_GPU_MAX_T, .context = capacity,
                              .fusion = ARB_FUSION_AUTO, .pdl = 1, .l2_side = side, .moe_early = moe_early,
                              .moe_order = moe_order, .attn_wide_from = (int)attn_wide_from};
    CK(arb_gpu_dims_from_config(&cfg, &rope, K, 0, &o.dims, why, sizeof why));
    o.fuse = arb_fuse_applied(fuse, fuse_given, 1, (int)o.dims.q_lora, (int)o.dims.nope, (int)o.dims.rope,
                              (int)o.dims.v_head, (int)o.dims.kv_lora);
    if (getenv("ARB_ENGINE_NO_PDL"))
        o.pdl = 0;
    arb_gpu_mem_t mem;
    CK(arb_gpu_model_plan(&o, &mem, why, sizeof why));
    char fuse_name[48], side_name[48];
    printf("config=%s layers=%u experts=%u weights=%s tp_shape=%u context=%u capacity=%u pdl=%d fuse=%s l2_side=%s "
           "moe_early=%d moe_order=%d attn_wide_from=%u timeline_build=%d\n",
           cfg.name, cfg.num_hidden_layers, cfg.n_routed_experts, wf == ARB_GPU_INT4 ? "int4" : "bf16", K, context,
           capacity, o.pdl, arb_engine_opts_bits_str(ARB_BITS_FUSE, o.fuse, fuse_name, sizeof fuse_name),
           arb_engine_opts_bits_str(ARB_BITS_L2_SIDE, o.l2_side, side_name, sizeof side_name), moe_early,
           moe_order, attn_wide_from, arb_tl_built());
    printf("memory_GB: embed=%.3f attention=%.3f norms_router=%.3f dense=%.3f shared=%.3f routed=%.3f lm_head=%.3f "
           "kv_cache=%.3f activations=%.3f total=%.3f\n",
           mem.embed / 1e9, mem.attention / 1e9, mem.norms_router / 1e9, mem.dense_mlp / 1e9, mem.shared_expert / 1e9,
           mem.routed_experts / 1e9, mem.lm_head / 1e9, mem.kv_cache / 1e9, mem.activations / 1e9, mem.total / 1e9);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        DIE("no CUDA device visible (the memory plan above needs none)");
    run_t r = {.eager = eager, .layers = cfg.num_hidden_layers, .k = cfg.num_experts_per_tok};
    CK(arb_gpu_model_create(&o, &r.m, why, sizeof why));
    double t0 = now_s();
    CK(arb_gpu_model_generate(r.m, why, sizeof why));
    printf("generate_s=%.3f\n", now_s() - t0);
    r.experts = malloc(sizeof(int32_t) * r.layers * ARB_GPU_MAX_T * r.k);
    CUDA(cudaStreamCreateWithFlags(&r.st, cudaStreamNonBlocking));
    double bw = 0;
    CK(arb_gpu_read_bandwidth(r.m, 10, r.st, &bw, why, sizeof why));
    printf("stream_read_TBps=%.4f\n", bw / 1e12);

    t0 = now_s(); /* prefill: the synthetic prompt in chunks of 8 */
    double pre_ms = 0;
    while (r.pos < context) {
        uint32_t tok[ARB_GPU_MAX_T];
        unsigned T = context - r.pos < ARB_GPU_MAX_T ? context - r.pos : ARB_GPU_MAX_T;
        for (unsigned t = 0; t < T; t++)
            tok[t] = arb_wgen_below(1, ARB_W_PROMPT, 0, r.pos + t, cfg.vocab_size);
        pre_ms += step(&r, tok, T);
    }
    printf("prefill_tokens=%u prefill_s=%.3f prefill_gpu_ms=%.1f\n", context, now_s() - t0, pre_ms);

    measure(&r, 1, S, bw, "decode");
    profile(&r, 1, "decode");
    arb_gpu_moe_bench_t mb;
    CK(arb_gpu_moe_bench(r.m, 1, 5, r.st, &mb, why, sizeof why));
    printf("moe_T=1 experts_per_layer=%.2f ours_us=%.2f ours_TBps=%.3f cublas_us=%.2f cublas_TBps=%.3f "
           "speedup=%.2f\n",
           mb.experts_per_layer, mb.ours_us, mb.ours_bytes / (mb.ours_us * 1e-6) / 1e12, mb.cublas_us,
           mb.cublas_bytes / (mb.cublas_us * 1e-6) / 1e12, mb.cublas_us / mb.ours_us);
    measure(&r, Tv, S, bw, "verify");
    profile(&r, Tv, "verify");
    CK(arb_gpu_moe_bench(r.m, Tv, 5, r.st, &mb, why, sizeof why));
    printf("moe_T=%u experts_per_layer=%.2f ours_us=%.2f ours_TBps=%.3f cublas_us=%.2f cublas_TBps=%.3f "
           "speedup=%.2f\n",
           Tv, mb.experts_per_layer, mb.ours_us, mb.ours_bytes / (mb.ours_us * 1e-6) / 1e12, mb.cublas_us,
           mb.cublas_bytes / (mb.cublas_us * 1e-6) / 1e12, mb.cublas_us / mb.ours_us);
    if (n_moe_ts)
        moe_sweep(&r, moe_ts, n_moe_ts, cfg.n_routed_experts);
    if (timeline) {
        timeline_step(&r, 1, timeline);
        timeline_step(&r, Tv, timeline);
    }
    arb_gpu_model_destroy(r.m);
    return 0;
}
