/* SPDX-License-Identifier: MIT */
/* `arbench engine` option parsing (engine/model/engine_opts.h); messages as `arbench sweep`'s. */
#include "model/engine_opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

void arb_engine_opts_defaults(arb_engine_opts_t *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->config, sizeof o->config, "%s", ARB_ENGINE_DEFAULT_CONFIG);
    o->weights = ARB_WEIGHTS_BF16;
    o->context = ARB_ENGINE_DEFAULT_CONTEXT;
    o->steps = ARB_ENGINE_DEFAULT_STEPS;
    o->spec_k = ARB_ENGINE_DEFAULT_SPEC_K;
    o->prefill_chunk = ARB_ENGINE_DEFAULT_PREFILL_CHUNK;
    o->modes = (1u << ARB_MODE_GRAPH) | (1u << ARB_MODE_EAGER);
    o->seed = ARB_ENGINE_DEFAULT_SEED;
    o->backend = ARB_ENGINE_GPU;
    o->accept_rate = -1;
    o->pdl = 1;
    o->step_form = ARB_STEP_LAUNCHES;
    o->l2_side = ARB_L2_SIDE_ROUTER; /* the GPU's launches form only (else dropped): decode -1.24%, verify -0.18% on an
                                        H100, two calls (results/engine-h100/62b1d56-router-pull/) */
    o->side_upto = 8; /* --l2-side in steps of every T */
    o->wave_from = 1; /* --wave-fit none: folding lost on an H200 wherever it did not also lower the registers */
    /* where the shapes fit them: one launch and its round trips fewer, the same bits
     * (results/engine-h100/d86afbb-fuse/); the prep in it, no ticket in qkv_a, the same bits
     * (results/engine-h200/c8f9a64-prep-qb/: decode -2.2%, verify -2.5% on an H200) */
    o->fuse = ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB;
    o->moe_early = ARB_ENGINE_DEFAULT_MOE_EARLY; /* dropped where there are no MoE launches */
}

void arb_engine_opts_usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N arbench engine [OPTIONS]\n"
            "  --config NAME|PATH  model: kimi-k2, deepseek-v3, tiny (engine/configs/) or a config.json (default kimi-k2)\n"
            "  --weights bf16|int4 routed experts' format (int4: W4A16 group 32, as Kimi-K2 Thinking/K2.5; default bf16)\n"
            "  --tp-shape K        every rank holds the shard shapes of TP=K (default: the number of ranks)\n"
            "  --layers L          override num_hidden_layers\n"
            "  --experts E         override n_routed_experts\n"
            "  --topk K            override num_experts_per_tok\n"
            "  --vocab V           override vocab_size\n"
            "  --context L         tokens in the KV cache before the timed steps (default 4096)\n"
            "  --steps S           timed decode steps and verify steps per mode (default 32)\n"
            "  --spec-k k          verify steps run T = k + 1 tokens (default 2: 3 tokens)\n"
            "  --prefill-chunk T   tokens per prefill step (default 8)\n"
            "  --impl NAME[:PARAMS]  all-reduce at every call site (default nccl on gpu, mpi-host on cpu)\n"
            "  --modes LIST        graph,eager (default both; the cpu backend runs eager)\n"
            "  --seed S            weights and prompt (default 1)\n"
            "  --out FILE          results CSV (default results/engine-<UTC time>-<host>.csv); an existing\n"
            "                      file is refused unless --append is given; the memory plan goes next to it\n"
            "                      as <out>-memplan-<run id>.txt\n"
            "  --append            add this run's rows to an existing --out file (rows keep their run_id)\n"
            "  --backend gpu|cpu   CUDA kernels, or the float64 CPU reference on host memory (default gpu)\n"
            "  --dry-run           print the per-rank memory plan and exit\n"
            "  --check-steps N     gpu: compare the first N decode tokens, logits and experts with the CPU\n"
            "                      reference (0: off); exit 1 when they disagree; not with --impl noop\n"
            "  --no-noop-replay    skip the compute-only replay (no all-reduce share in the rows)\n"
            "  --accept-rate P[,P...]  also run speculative cycles: k drafts per verify step, each the right token with\n"
            "                      probability p (draws seeded, wgen ARB_W_ACCEPT), the longest matching prefix accepted;\n"
            "                      a list (at most 16) runs the cycles once per p on the same model, one spec row each\n"
            "  --draft-dir DIR     speculative cycles with the EAGLE-3 draft head in DIR (config.json, safetensors;\n"
            "                      cpu backend): its own proposals, greedy acceptance measured, one spec row per mode\n"
            "  --dump-tokens FILE  write every step's greedy tokens (rank 0), for tests\n"
            "  --dump-logits FILE  write the last step's logits of rank 0's shard, for tests\n"
            "  --weights-dir DIR   load a Hugging Face checkpoint (DIR/config.json, model.safetensors[.index.json]):\n"
            "                      bf16, FP8 128x128 blocks (dequantized to bf16) or compressed-tensors INT4 experts;\n"
            "                      each rank reads its own slices (--config and --weights come from DIR)\n"
            "  --prompt-ids FILE   the prompt as token ids: decimal integers separated by whitespace; it fills\n"
            "                      the cache (--context defaults to its length)\n"
            "  --out-ids FILE      write the greedy continuation's token ids (rank 0), the same format\n"
            "  --force             replace existing --dump-tokens / --dump-logits / --out-ids files\n"
            "  --pdl on|off        gpu: programmatic dependent launch between the step's kernels (default on)\n"
            "  --step-form F       gpu: launches (a launch per kernel; the default), persistent (each layer's\n"
            "                      attention and MoE block one persistent launch each, between the call sites)\n"
            "                      or persistent-attn (the attention only)\n"
            "  --l2-ahead LIST     gpu, launches form: later kernels' weights pulled toward L2 by earlier\n"
            "                      latency-bound ones after their wait: none, or a comma list of o_proj (by the\n"
            "                      absorption) and router (by W_uv) (default none)\n"
            "  --l2-side LIST      gpu, launches form: a side branch of the step pulls a layer's weights toward\n"
            "                      L2 while the chain runs: none, or a comma list of o_proj, router, shared\n"
            "                      (the shared expert) and cache (the layer's latent cache, every position of\n"
            "                      its capacity; these four during the attention) and qkv_a (the next layer's,\n"
            "                      during the MoE block); the same bits (default router with --backend gpu\n"
            "                      --step-form launches, else none)\n"
            "  --l2-side-upto T    the side branch only in steps of at most T tokens, 1..8 (default 8)\n"
            "  --wave-fit LIST     gpu, launches form: projections whose grid is folded into one wave of\n"
            "                      resident blocks, each block several tiles, the later ones' weights pulled\n"
            "                      toward L2 before the wait: none, or a comma list of qkv_a and o_proj\n"
            "                      (default none)\n"
            "  --wave-fit-from T   the fold only in steps of at least T tokens, 1..8 (default 1)\n"
            "  --fuse LIST         gpu, launches form: launches run as one kernel: none, or a comma list of\n"
            "                      qb_absorb (q_b and the absorption, bit-identical; needs qk_nope_head_dim 128)\n"
            "                      and merge_uv (the attention's merge and W_uv; W_uv summed in its own order;\n"
            "                      needs v_head_dim <= 128) and prep_qb (the q_a norm and the latent's norm and\n"
            "                      RoPE in qb_absorb's launch instead of qkv_a's last block, bit-identical;\n"
            "                      needs qb_absorb, q_lora_rank >= 256 and q_lora_rank + kv_lora_rank\n"
            "                      <= 4096) (default qb_absorb,prep_qb where the model's shapes fit them)\n"
            "  --attn-min-rows N   gpu: the attention's row groups keep at least N of the step's T x heads\n"
            "                      rows, 1..64; fewer, fuller groups (one m16 tile holds 16 rows), the same bits\n"
            "                      (default 4: T = 1 two groups of 4 at Kimi-K2's 8 heads a rank)\n"
            "  --attn-fill N       gpu: the attention's grid aims at N CTAs an SM, 1..16, as many row groups\n"
            "                      as that takes; from 4 on SM90 its kernel is compiled for four an SM (64\n"
            "                      registers; slower on an H100), past 4 more than one wave; the same bits\n"
            "                      (default 3)\n"
            "  --attn-wide-from T  gpu, launches form: steps of at least T tokens (1..8) whose T x heads rows\n"
            "                      pass one m16 tile (16) run the attention in CTAs of 16 warps holding up to\n"
            "                      32 rows a chunk (each chunk staged once, not once a row group); the same\n"
            "                      bits (default: never)\n"
            "  --moe-stage M       gpu, launches form: none, or smem (the routed INT4 gate/up tiles at T = 1\n"
            "                      stage more groups a round in shared memory; the same bits; default none)\n"
            "  --moe-order O       gpu, launches form: the MoE gate/up grid's order, auto (default: the routed\n"
            "                      tiles first where they fit one an SM), shared-first, routed-first or spread\n"
            "                      (as many routed tiles as SMs, the shared parts, the rest); the same bits\n"
            "  --moe-early M       gpu, MoE launches: spec (default: down issues its first round of routed\n"
            "                      weights before its PDL wait from a guess of the selection, checked after the\n"
            "                      wait and issued again where wrong; gate/up triggers it after its own wait),\n"
            "                      spec-sync (the same down, gate/up triggering at its start) or off (all after\n"
            "                      the wait); the same bits; on and l2 are withdrawn (the GPU then disagreed\n"
            "                      with the CPU reference)\n"
            "  --quiet             no progress lines\n"
            "  --profile FILE      per-site choice from a profile of arbench profile (CSV or JSON); no match: nccl\n"
            "  --tune              first sweep exactly the call-site shapes, write that profile next to --out, use it\n"
            "  --baseline IMPL[:PARAMS]  also run this and compare, decode and verify steps interleaved A/B\n");
}

enum { O_CONFIG = 1000, O_WEIGHTS, O_TPSHAPE, O_LAYERS, O_EXPERTS, O_TOPK, O_VOCAB, O_CONTEXT, O_STEPS, O_SPECK,
       O_CHUNK, O_PDL, O_FORM, O_AHEAD, O_SIDE, O_SIDEUPTO, O_WAVE, O_WAVEFROM, O_FUSE, O_MOESTAGE, O_MOEORDER, O_MOEEARLY, O_ATTNROWS, O_ATTNFILL, O_ATTNWIDE, O_IMPL, O_MODES, O_SEED, O_OUT, O_BACKEND, O_DRY, O_CHECK, O_NONOOP, O_DTOK, O_DLOG, O_QUIET,
       O_ACCEPT, O_HELP, O_PROFILE, O_TUNE, O_BASELINE, O_APPEND, O_FORCE, O_DRAFT,
       O_WDIR, O_PROMPT, O_OUTIDS };

/* --accept-rate P[,P...]: probabilities in 0..1, at most ARB_ENGINE_MAX_RATES, none twice. */
static int parse_rates(const char *v, arb_engine_opts_t *o, char *err, size_t len)
{
    o->naccept = 0;
    const char *s = v;
    for (;;) {
        char *end;
        double x = strtod(s, &end);
        if (end == s || (*end && *end != ',') || !(x >= 0 && x <= 1)) {
            snprintf(err, len, "--accept-rate '%s': expected probabilities in 0..1, comma-separated (e.g. 0.5,0.7,0.9)", v);
            return 1;
        }
        for (unsigned i = 0; i < o->naccept; i++)
            if (o->accept_rates[i] == x) {
                snprintf(err, len, "--accept-rate '%s': %g is listed twice", v, x);
                return 1;
            }
        if (o->naccept == ARB_ENGINE_MAX_RATES) {
            snprintf(err, len, "--accept-rate '%s': more than %u rates", v, ARB_ENGINE_MAX_RATES);
            return 1;
        }
        o->accept_rates[o->naccept++] = x;
        if (!*end)
            break;
        s = end + 1;
    }
    o->accept_rate = o->accept_rates[0];
    return 0;
}

static int parse_uint(const char *opt, const char *v, unsigned lo, unsigned hi, unsigned *out, char *err, size_t len)
{
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (!*v || *end || v[0] == '-' || x < lo || x > hi) {
        snprintf(err, len, "%s '%s': expected an integer in %u..%u", opt, v, lo, hi);
        return -1;
    }
    *out = (unsigned)x;
    return 0;
}

int arb_engine_opts_attn_wide_from(const char *v, unsigned *out, char *err, size_t err_len)
{
    return parse_uint("--attn-wide-from", v, 1, 8, out, err, err_len);
}

static int parse_path(const char *opt, const char *v, char *dst, size_t n, char *err, size_t len)
{
    if (!*v || strlen(v) >= n) {
        snprintf(err, len, "%s: expected a file path (1..%zu characters)", opt, n - 1);
        return -1;
    }
    snprintf(dst, n, "%s", v);
    return 0;
}

static int parse_impl(const char *opt, const char *v, arb_impl_spec_t *s, char *err, size_t len)
{
    const char *colon = strchr(v, ':');
    size_t nl = colon ? (size_t)(colon - v) : strlen(v);
    if (nl == 0 || nl >= sizeof s->name || strchr(v, '|') || (!colon && strchr(v, ','))) {
        snprintf(err, len, "%s '%s': expected one NAME[:PARAMS], e.g. nccl, nccl:algo=Ring,proto=LL, mpi-host", opt, v);
        return -1;
    }
    if (colon && strlen(colon + 1) >= sizeof s->params) {
        snprintf(err, len, "%s '%s': parameters longer than %zu characters", opt, v, sizeof s->params - 1);
        return -1;
    }
    memset(s, 0, sizeof *s);
    memcpy(s->name, v, nl);
    if (colon) {
        snprintf(s->params, sizeof s->params, "%s", colon + 1);
        s->has_params = 1;
    }
    return 0;
}

/* v as one of names[0 .. n) (n >= 2): its index in *idx, or -1 with "OPT 'v': expected a, b or c". */
static int parse_choice(const char *opt, const char *v, const char *const *names, int n, int *idx, char *err,
                        size_t len)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0) {
            *idx = i;
            return 0;
        }
    int w = snprintf(err, len, "%s '%s': expected ", opt, v);
    for (int i = 0; i < n && w >= 0 && (size_t)w < len; i++)
        w += snprintf(err + w, len - (size_t)w, "%s%s", names[i], i + 2 < n ? ", " : i + 1 < n ? " or " : "");
    return -1;
}

static const char *const moe_order_names[] = {"auto", "shared-first", "routed-first", "spread"};
enum { n_moe_orders = (int)(sizeof moe_order_names / sizeof moe_order_names[0]) };

const char *arb_engine_opts_moe_order_name(int order)
{
    return order >= 0 && order < n_moe_orders ? moe_order_names[order] : NULL;
}

int arb_engine_opts_moe_order(const char *v, int *order, char *err, size_t err_len)
{
    return parse_choice("--moe-order", v, moe_order_names, n_moe_orders, order, err, err_len);
}

static const char *const moe_early_names[] = {"off", "on", "l2", "spec", "spec-sync"};
enum { n_moe_earlies = (int)(sizeof moe_early_names / sizeof moe_early_names[0]) };

const char *arb_engine_opts_moe_early_name(int early)
{
    return early >= 0 && early < n_moe_earlies ? moe_early_names[early] : NULL;
}

int arb_engine_opts_moe_early(const char *v, int *early, char *err, size_t err_len)
{
    return parse_choice("--moe-early", v, moe_early_names, n_moe_earlies, early, err, err_len);
}

static int parse_modes(const char *v, unsigned *modes, char *err, size_t len)
{
    char buf[256];
    if (!*v || strlen(v) >= sizeof buf) {
        snprintf(err, len, "--modes '%s': expected graph, eager or graph,eager", v);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", v);
    *modes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "graph") == 0)
            *modes |= 1u << ARB_MODE_GRAPH;
        else if (strcmp(tok, "eager") == 0)
            *modes |= 1u << ARB_MODE_EAGER;
        else {
            snprintf(err, len, "--modes '%s': unknown mode '%s' (expected graph, eager or graph,eager)", v, tok);
            return -1;
        }
    }
    if (!*modes) {
        snprintf(err, len, "--modes '%s': expected graph, eager or graph,eager", v);
        return -1;
    }
    return 0;
}

int arb_engine_opts_parse(int argc, char **argv, arb_engine_opts_t *o, char *err, size_t len)
{
    static const struct option lo[] = {
        {"config", required_argument, 0, O_CONFIG},   {"weights", required_argument, 0, O_WEIGHTS},
        {"tp-shape", required_argument, 0, O_TPSHAPE}, {"layers", required_argument, 0, O_LAYERS},
        {"experts", required_argument, 0, O_EXPERTS}, {"topk", required_argument, 0, O_TOPK},
        {"vocab", required_argument, 0, O_VOCAB},     {"context", required_argument, 0, O_CONTEXT},
        {"steps", required_argument, 0, O_STEPS},     {"spec-k", required_argument, 0, O_SPECK},
        {"prefill-chunk", required_argument, 0, O_CHUNK}, {"impl", required_argument, 0, O_IMPL},
        {"modes", required_argument, 0, O_MODES},     {"seed", required_argument, 0, O_SEED},
        {"out", required_argument, 0, O_OUT},         {"backend", required_argument, 0, O_BACKEND},
        {"dry-run", no_argument, 0, O_DRY},           {"check-steps", required_argument, 0, O_CHECK},
        {"no-noop-replay", no_argument, 0, O_NONOOP}, {"dump-tokens", required_argument, 0, O_DTOK},
        {"dump-logits", required_argument, 0, O_DLOG}, {"quiet", no_argument, 0, O_QUIET},
        {"accept-rate", required_argument, 0, O_ACCEPT},
        {"profile", required_argument, 0, O_PROFILE}, {"tune", no_argument, 0, O_TUNE},
        {"baseline", required_argument, 0, O_BASELINE}, {"append", no_argument, 0, O_APPEND},
        {"force", no_argument, 0, O_FORCE},
        {"draft-dir", required_argument, 0, O_DRAFT},
        {"weights-dir", required_argument, 0, O_WDIR}, {"prompt-ids", required_argument, 0, O_PROMPT},
        {"out-ids", required_argument, 0, O_OUTIDS},
        {"pdl", required_argument, 0, O_PDL},         {"step-form", required_argument, 0, O_FORM},
        {"l2-ahead", required_argument, 0, O_AHEAD},
        {"l2-side", required_argument, 0, O_SIDE},
        {"l2-side-upto", required_argument, 0, O_SIDEUPTO},
        {"wave-fit", required_argument, 0, O_WAVE},
        {"wave-fit-from", required_argument, 0, O_WAVEFROM},
        {"fuse", required_argument, 0, O_FUSE},
        {"moe-stage", required_argument, 0, O_MOESTAGE},
        {"moe-order", required_argument, 0, O_MOEORDER},
        {"moe-early", required_argument, 0, O_MOEEARLY},
        {"attn-min-rows", required_argument, 0, O_ATTNROWS},
        {"attn-fill", required_argument, 0, O_ATTNFILL},
        {"attn-wide-from", required_argument, 0, O_ATTNWIDE},
        {"help", no_argument, 0, O_HELP},             {0, 0, 0, 0},
    };
    arb_engine_opts_defaults(o);
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case O_CONFIG:
            bad = parse_path("--config", optarg, o->config, sizeof o->config, err, len);
            o->config_given = 1;
            break;
        case O_WDIR: bad = parse_path("--weights-dir", optarg, o->weights_dir, sizeof o->weights_dir - 16, err, len); break;
        case O_PROMPT: bad = parse_path("--prompt-ids", optarg, o->prompt_ids, sizeof o->prompt_ids, err, len); break;
        case O_OUTIDS: bad = parse_path("--out-ids", optarg, o->out_ids, sizeof o->out_ids, err, len); break;
        case O_WEIGHTS: {
            static const char *const names[] = {"bf16", "int4"}; /* ARB_WEIGHTS_BF16, ARB_WEIGHTS_INT4 */
            int i = 0;
            o->weights_given = 1;
            bad = parse_choice("--weights", optarg, names, 2, &i, err, len);
            o->weights = i ? ARB_WEIGHTS_INT4 : ARB_WEIGHTS_BF16;
            break;
        }
        case O_TPSHAPE: bad = parse_uint("--tp-shape", optarg, 1, 1024, &o->tp_shape, err, len); break;
        case O_LAYERS: bad = parse_uint("--layers", optarg, 1, 1024, &o->overrides.layers, err, len); break;
        case O_EXPERTS: bad = parse_uint("--experts", optarg, 1, 1024, &o->overrides.experts, err, len); break;
        case O_TOPK: bad = parse_uint("--topk", optarg, 1, 64, &o->overrides.topk, err, len); break;
        case O_VOCAB: bad = parse_uint("--vocab", optarg, 1, 1u << 24, &o->overrides.vocab, err, len); break;
        case O_CONTEXT:
            bad = parse_uint("--context", optarg, 0, 1u << 20, &o->context, err, len);
            o->context_given = 1;
            break;
        case O_STEPS: bad = parse_uint("--steps", optarg, 1, 100000, &o->steps, err, len); break;
        case O_SPECK: bad = parse_uint("--spec-k", optarg, 1, 63, &o->spec_k, err, len); break;
        case O_CHUNK: bad = parse_uint("--prefill-chunk", optarg, 1, 4096, &o->prefill_chunk, err, len); break;
        case O_IMPL: bad = parse_impl("--impl", optarg, &o->impl, err, len); o->impl_given = !bad; break;
        case O_MODES: bad = parse_modes(optarg, &o->modes, err, len); break;
        case O_SEED: {
            char *end;
            unsigned long long x = strtoull(optarg, &end, 0);
            if (!*optarg || *end || optarg[0] == '-') {
                snprintf(err, len, "--seed '%s': expected a non-negative integer", optarg);
                bad = 1;
            }
            o->seed = x;
            break;
        }
        case O_OUT: bad = parse_path("--out", optarg, o->out, sizeof o->out, err, len); break;
        case O_BACKEND: {
            static const char *const names[] = {"gpu", "cpu"}; /* ARB_ENGINE_GPU, ARB_ENGINE_CPU */
            int i = 0;
            bad = parse_choice("--backend", optarg, names, 2, &i, err, len);
            o->backend = i ? ARB_ENGINE_CPU : ARB_ENGINE_GPU;
            break;
        }
        case O_DRY: o->dry_run = 1; break;
        case O_CHECK: bad = parse_uint("--check-steps", optarg, 0, 100000, &o->check_steps, err, len); break;
        case O_NONOOP: o->no_compute_only = 1; break;
        case O_DTOK: bad = parse_path("--dump-tokens", optarg, o->dump_tokens, sizeof o->dump_tokens, err, len); break;
        case O_DLOG: bad = parse_path("--dump-logits", optarg, o->dump_logits, sizeof o->dump_logits, err, len); break;
        case O_QUIET: o->quiet = 1; break;
        case O_PDL: {
            static const char *const names[] = {"on", "off"};
            int i = 0;
            bad = parse_choice("--pdl", optarg, names, 2, &i, err, len);
            o->pdl = i == 0;
            break;
        }
        case O_FORM: {
            static const char *const names[] = {"launches", "persistent", "persistent-attn"}; /* arb_step_form_t order */
            int i = 0;
            bad = parse_choice("--step-form", optarg, names, 3, &i, err, len);
            o->step_form = (arb_step_form_t)i;
            break;
        }
        case O_AHEAD: bad = arb_engine_opts_bits_parse(ARB_BITS_L2_AHEAD, optarg, &o->l2_ahead, err, len); break;
        case O_SIDE:
            bad = arb_engine_opts_bits_parse(ARB_BITS_L2_SIDE, optarg, &o->l2_side, err, len);
            o->l2_side_given = 1;
            break;
        case O_SIDEUPTO: bad = parse_uint("--l2-side-upto", optarg, 1, 8, &o->side_upto, err, len); break;
        case O_WAVE: bad = arb_engine_opts_bits_parse(ARB_BITS_WAVE_FIT, optarg, &o->wave_fit, err, len); break;
        case O_WAVEFROM: bad = parse_uint("--wave-fit-from", optarg, 1, 8, &o->wave_from, err, len); break;
        case O_FUSE:
            bad = arb_engine_opts_bits_parse(ARB_BITS_FUSE, optarg, &o->fuse, err, len);
            o->fuse_given = 1;
            break;
        case O_ATTNROWS: bad = parse_uint("--attn-min-rows", optarg, 1, 64, &o->attn_min_rows, err, len); break;
        case O_ATTNFILL: bad = parse_uint("--attn-fill", optarg, 1, 16, &o->attn_fill, err, len); break;
        case O_ATTNWIDE: bad = arb_engine_opts_attn_wide_from(optarg, &o->attn_wide_from, err, len); break;
        case O_MOESTAGE: {
            static const char *const names[] = {"none", "smem"};
            bad = parse_choice("--moe-stage", optarg, names, 2, &o->moe_stage, err, len);
            break;
        }
        case O_MOEORDER: bad = arb_engine_opts_moe_order(optarg, &o->moe_order, err, len); break;
        case O_MOEEARLY:
            bad = arb_engine_opts_moe_early(optarg, &o->moe_early, err, len);
            o->moe_early_given = 1;
            break;
        case O_APPEND: o->append = 1; break;
        case O_FORCE: o->force = 1; break;
        case O_ACCEPT: bad = parse_rates(optarg, o, err, len); break;
        case O_DRAFT: bad = parse_path("--draft-dir", optarg, o->draft_dir, sizeof o->draft_dir, err, len); break;
        case O_HELP: return 1;
        case O_PROFILE: bad = parse_path("--profile", optarg, o->profile, sizeof o->profile, err, len); break;
        case O_TUNE: o->tune = 1; break;
        case O_BASELINE: bad = parse_impl("--baseline", optarg, &o->baseline, err, len); o->baseline_given = !bad; break;
        default:
            snprintf(err, len, "unknown or incomplete option '%s' (see arbench engine --help)", argv[optind - 1]);
            return -1;
        }
        if (bad)
            return -1;
    }
    if (optind < argc) {
        snprintf(err, len, "unexpected argument '%s' (see arbench engine --help)", argv[optind]);
        return -1;
    }
    return arb_engine_opts_settle(o, err, len);
}
