/* SPDX-License-Identifier: MIT */
/*
 * `arbench engine`'s setup and order of work (engine/run/run.h): config and overrides,
 * shards, memory plan (printed; refused when it does not fit; --dry-run stops here),
 * metadata, call-site instances, then the run configurations: the compute-only replay
 * first (noop on the GPU, no communication on the CPU), then the chosen implementation,
 * whose rows are written as each phase finishes (an interrupted run keeps them).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arbench/status.h"
#include "base/common.h"
#include "gpu/kernels/qb_fit.h"
#include "model/engine_outputs.h"
#include "model/memplan.h"
#include "run/run.h"
#include "run/run_ab.h"
#include "run/run_check.h"
#include "run/run_draft.h"
#include "run/run_phases.h"
#include "run/run_profile.h"
#include "run/run_rows.h"
#include "run/run_state.h"
#include "run/run_weights.h"
#include "sweep/report.h"
#include "sweep/runner.h"
#include "topo/topo.h"

/* "20261201T094307Z": the run's UTC time in file names and run ids. */
static void utc_stamp(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm);
}

static void default_out(char *buf, size_t len, const char *host)
{
    char t[32];
    utc_stamp(t, sizeof t);
    mkdir("results", 0755);
    snprintf(buf, len, "results/engine-%s-%s.csv", t, host);
}

/* Every rank learns whether any rank failed; rank 0 prints the first reason. */
static int failed_everywhere(arb_engine_run_t *r, int bad, char *msg, size_t len)
{
    if (arb_agree_failure(r->m, bad, msg, len) < 0)
        return 0;
    if (r->m->rank == 0)
        fprintf(stderr, "arbench engine: %s\n", msg);
    return 1;
}

static int setup_model(arb_engine_run_t *r, char *msg, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    arb_engine_setup_t *s = &r->s;
    if (arb_config_load(o->config, &r->cfg, msg, len) != ARB_OK ||
        arb_config_override(&r->cfg, &o->overrides, msg, len) != ARB_OK || arb_run_weights_open(r, msg, len) != 0)
        return -1;
    const unsigned N = (unsigned)r->m->nranks, K = o->tp_shape ? o->tp_shape : N;
    if (N > K) {
        snprintf(msg, len, "--tp-shape %u: %u ranks need at least %u shards (give --tp-shape >= %u)", K, N, N, N);
        return -1;
    }
    /* --fuse: the fused kernels this model's step runs (qb_fit.h: the default's where the shapes fit),
     * once, so the rows and the per-kernel tables say what ran; the GPU backend applies the same rule */
    const int launches = o->backend == ARB_ENGINE_GPU && o->step_form == ARB_STEP_LAUNCHES;
    r->opts.fuse = arb_fuse_applied(o->fuse, o->fuse_given, launches, (int)r->cfg.q_lora_rank,
                                    (int)r->cfg.qk_nope_head_dim, (int)r->cfg.qk_rope_head_dim, (int)r->cfg.v_head_dim,
                                    (int)r->cfg.kv_lora_rank);
    s->opts = o, s->cfg = &r->cfg, s->tp_shape = K;
    if (o->backend == ARB_ENGINE_CPU) {
        if (K % N) {
            snprintf(msg, len,
                     "--tp-shape %u with %u ranks on the cpu backend: each rank stands in for tp-shape / ranks shards, "
                     "so tp-shape must be a multiple of the ranks",
                     K, N);
            return -1;
        }
        s->shard_count = K / N, s->shard_first = (unsigned)r->m->rank * s->shard_count;
        s->cuda_device = -1;
    } else {
        s->shard_count = 1, s->shard_first = (unsigned)r->m->rank;
        s->cuda_device = r->m->local_rank;
    }
    /* a debug hook for the sharding test: every rank holds this one shard (a wrong model) */
    const char *dbg = getenv("ARBENCH_ENGINE_DEBUG_SHARD");
    if (dbg && *dbg)
        s->shard_first = (unsigned)atoi(dbg) % K, s->shard_count = 1;
    if (arb_shard_make_range(&r->cfg, K, s->shard_first, s->shard_count, o->weights, &s->shard, msg, len) != ARB_OK ||
        arb_rope_make(&r->cfg, &s->rope, msg, len) != ARB_OK || arb_run_weights_check(r, msg, len) != 0)
        return -1;
    s->max_tokens = o->spec_k + 1 > o->prefill_chunk ? o->spec_k + 1 : o->prefill_chunk;
    s->positions = o->context + o->steps + o->spec_k + 1;
    r->modes = o->backend == ARB_ENGINE_CPU ? 1u << ARB_MODE_EAGER : o->modes;
    return 0;
}

/* Prints the plan (rank 0's shard; the others differ at most by lm_head's remainder)
 * and says whether every rank's plan fits. */
static int memory_plan(arb_engine_run_t *r, arb_memplan_t *plan, char *msg, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    unsigned instances = 1 + !o->no_compute_only;
    arb_memplan_compute(&r->cfg, &r->s.shard, o->weights, r->s.positions, r->s.max_tokens, instances, plan);
    if (r->be && !o->dry_run) {
        plan->available = r->be->available(&r->s, plan->available_what, sizeof plan->available_what);
        if (o->backend == ARB_ENGINE_CPU && plan->available >= 0 && r->m->local_nranks > 1) {
            plan->available /= r->m->local_nranks; /* the host is shared by this node's ranks */
            size_t n = strlen(plan->available_what);
            snprintf(plan->available_what + n, sizeof plan->available_what - n, " / %d ranks", r->m->local_nranks);
        }
    } else {
        snprintf(plan->available_what, sizeof plan->available_what, o->dry_run ? "--dry-run: not queried" : "no backend");
    }
    char title[512];
    snprintf(title, sizeof title, "rank 0 of %d, shard %u%s of tp-shape %u; %s (%s), %u layers, %u experts, %s experts, "
             "%u cache positions, steps of up to %u tokens",
             r->m->nranks, r->s.shard_first, r->s.shard_count > 1 ? "+" : "", r->s.tp_shape, r->cfg.name,
             r->cfg.model_type_str, r->cfg.num_hidden_layers, r->cfg.n_routed_experts,
             o->weights == ARB_WEIGHTS_INT4 ? "int4" : "bf16", r->s.positions, r->s.max_tokens);
    if (r->m->rank == 0)
        arb_memplan_print(stdout, plan, title), fflush(stdout);
    int bad = !arb_memplan_fits(plan);
    if (r->be && r->be->model_bytes) { /* the backend's own count of what it allocates */
        char mwhy[512] = "";
        double mb = r->be->model_bytes(&r->s, mwhy, sizeof mwhy);
        if (r->m->rank == 0 && mb >= 0)
            printf("#   %s model's own plan: %.0f bytes (%.3f GB; plugin buffers not included)\n", r->be->name, mb,
                   mb / 1e9);
        else if (r->m->rank == 0)
            printf("#   %s model's own plan: not available (%s)\n", r->be->name, mwhy);
        if (mb >= 0 && plan->available >= 0 && mb + plan->bytes[ARB_MEM_PLUGIN] > plan->available) {
            snprintf(msg, len, "the %s model needs %.3f GB per rank (plus %.3f GB of plugin buffers) but %s has %.3f GB",
                     r->be->name, mb / 1e9, plan->bytes[ARB_MEM_PLUGIN] / 1e9, plan->available_what,
                     plan->available / 1e9);
            return -1;
        }
    }
    if (bad)
        snprintf(msg, len, "the memory plan needs %.3f GB per rank but %s has %.3f GB (the table above)",
                 plan->total / 1e9, plan->available_what, plan->available / 1e9);
    return bad ? -1 : 0;
}

static void collect_meta(arb_engine_run_t *r)
{
    arb_meta_collect(&r->meta, r->argc, r->argv);
    r->meta.ranks = r->m->nranks, r->meta.nodes = r->m->nnodes;
    char why[512];
    if (r->s.cuda_device >= 0) {
        arb_gpu_info_t gi;
        if (arb_gpu_select(r->s.cuda_device, &gi, why, sizeof why) == ARB_OK) {
            snprintf(r->meta.gpu, sizeof r->meta.gpu, "%s", gi.name);
            snprintf(r->meta.sm, sizeof r->meta.sm, "%s", gi.sm);
            snprintf(r->meta.driver, sizeof r->meta.driver, "%s", gi.driver);
            snprintf(r->meta.cuda, sizeof r->meta.cuda, "%s", gi.cuda);
        }
    }
    arb_topo_result_t topo;
    if (arb_topo_setup(&r->m->world, r->s.cuda_device, 1, &topo, why, sizeof why) == 0) {
        snprintf(r->meta.fabric, sizeof r->meta.fabric, "%s", topo.fabric);
        snprintf(r->meta.binding, sizeof r->meta.binding, "rank0:%.240s", topo.binding);
    } else {
        snprintf(r->meta.fabric, sizeof r->meta.fabric, "unknown");
    }
    char t[32];
    utc_stamp(t, sizeof t);
    snprintf(r->meta.run_id, sizeof r->meta.run_id, "%.20s-%.20s-%ld", t, r->meta.host, (long)getpid());
    MPI_Bcast(r->meta.run_id, sizeof r->meta.run_id, MPI_CHAR, 0, r->m->world);
}

/* Opens spec's instance for every site (mode GRAPH when graph steps will be captured). */
static arb_status_t open_config(arb_engine_run_t *r, arb_runcfg_t *c, arb_cfg_role_t role, const char *name,
                                const char *params, char *why, size_t len)
{
    unsigned nsites = 2 * r->cfg.num_hidden_layers;
    c->role = role;
    snprintf(c->spec.name, sizeof c->spec.name, "%s", name);
    snprintf(c->spec.params, sizeof c->spec.params, "%s", params);
    snprintf(c->fusion, sizeof c->fusion, "local");
    c->sites = calloc(nsites, sizeof *c->sites);
    if (!c->sites)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    if (!*name) { /* no communication: each rank's partial sums alone */
        snprintf(c->describe, sizeof c->describe, "no all-reduce (residual + RMSNorm of this rank's partial)");
        return ARB_OK;
    }
    char err[2048];
    int lbad = arb_plugin_load(name, &c->lp[0], err, sizeof err) != 0;
    if (arb_agree_failure(r->m, lbad, err, sizeof err) >= 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--impl %s: %s", name, err);
    arb_use_t use = {.op = ARB_OP_ALLREDUCE_RMSNORM, .dtype = ARB_DTYPE_BF16,
                     .mode = (r->modes & (1u << ARB_MODE_GRAPH)) ? ARB_MODE_GRAPH : ARB_MODE_EAGER,
                     .max_bytes = (size_t)r->s.max_tokens * r->cfg.hidden_size * 2, .max_tokens = r->s.max_tokens,
                     .hidden = r->cfg.hidden_size, .cuda_device = r->s.cuda_device};
    arb_status_t st = arb_inst_open(r->m, &c->lp[0], params, &use, &c->inst[0], why, len);
    if (st == ARB_DECLINE && use.mode == ARB_MODE_GRAPH) {
        if (r->m->rank == 0)
            fprintf(stderr, "# %s declines graph capture (%s): eager steps only\n", name, why);
        r->modes &= ~(1u << ARB_MODE_GRAPH);
        use.mode = ARB_MODE_EAGER;
        st = arb_inst_open(r->m, &c->lp[0], params, &use, &c->inst[0], why, len);
    }
    if (st != ARB_OK) {
        arb_plugin_unload(&c->lp[0]);
        return st;
    }
    c->ninst = 1;
    snprintf(c->describe, sizeof c->describe, "%s", arb_inst_describe(c->inst[0]));
    snprintf(c->fusion, sizeof c->fusion, "%s", arb_inst_has_fused(c->inst[0]) ? "plugin" : "composed");
    for (unsigned s = 0; s < nsites; s++)
        c->sites[s] = c->inst[0];
    return ARB_OK;
}

static void close_config(arb_runcfg_t *c)
{
    for (unsigned i = 0; !c->borrowed && i < c->ninst; i++) {
        arb_inst_close(c->inst[i]);
        arb_plugin_unload(&c->lp[i]);
    }
    c->ninst = 0;
    free(c->sites);
    free(c->sites_t1);
    for (int mo = 0; mo < ARB_MODE_COUNT; mo++) {
        for (int p = 0; p < ARB_PHASES; p++)
            free(c->res[mo][p].us), free(c->res[mo][p].tokens);
        for (unsigned i = 0; i < ARB_ENGINE_MAX_RATES; i++)
            free(c->specs[mo][i].us), free(c->specs[mo][i].tokens);
    }
}

int arb_engine_main(const arb_engine_opts_t *o, arb_mpi_t *m, int argc, char **argv)
{
    arb_engine_run_t *r = calloc(1, sizeof *r);
    char msg[2048] = "";
    int rc = 2;
    if (!r)
        return 2;
    r->opts = *o; /* --weights-dir and --prompt-ids may set --weights and --context */
    r->o = o = &r->opts, r->m = m, r->argc = argc, r->argv = argv;
    r->bandwidth = -1, r->check_max_logit_diff = -1;
    r->progress = m->rank == 0 && !o->quiet && arb_progress_wanted(); /* the launcher's terminal counts (sweep/report.h) */
    r->be = o->backend == ARB_ENGINE_CPU ? &arb_engine_backend_cpu : arb_engine_backend_gpu();
    if (failed_everywhere(r, setup_model(r, msg, sizeof msg) != 0, msg, sizeof msg))
        goto out;
    if (failed_everywhere(r, arb_run_draft_setup(r, msg, sizeof msg) != ARB_OK, msg, sizeof msg)) /* --draft-dir */
        goto out;
    if (o->backend == ARB_ENGINE_GPU && !o->dry_run) {
        char gwhy[512] = "";
        int ngpu = r->be ? arb_gpu_count(gwhy, sizeof gwhy) : 0;
        int bad = !r->be || ngpu <= r->m->local_rank;
        if (!r->be)
            snprintf(msg, sizeof msg, "--backend gpu: this arbench was built without the GPU engine (no CUDA toolkit); "
                     "use --backend cpu or rebuild with CUDA");
        else if (bad)
            snprintf(msg, sizeof msg, "--backend gpu: local rank %d has no GPU (%d visible%s%s); use --backend cpu",
                     r->m->local_rank, ngpu, ngpu ? "" : ": ", ngpu ? "" : gwhy);
        if (failed_everywhere(r, bad, msg, sizeof msg))
            goto out;
    }
    arb_memplan_t plan;
    int pbad = memory_plan(r, &plan, msg, sizeof msg) != 0;
    if (failed_everywhere(r, pbad, msg, sizeof msg))
        goto out;
    if (o->dry_run) {
        rc = 0;
        goto out;
    }
    collect_meta(r);
    if (m->rank == 0) {
        snprintf(r->out, sizeof r->out, "%s", o->out);
        if (!r->out[0])
            default_out(r->out, sizeof r->out, r->meta.host);
    }
    /* the compute-only replay first, then the implementation (its rows as they finish) */
    const char *impl = o->impl_given ? o->impl.name : o->backend == ARB_ENGINE_CPU ? "mpi-host" : "nccl";
    arb_status_t st = ARB_OK;
    /* with noop at the sites the run is the compute-only replay itself; the replay's noop is
     * the PDL-capable one (pdl=1), so its sites do not break the compute's launch chain and
     * what a plugin's sites cost beyond that lands in allreduce_us (docs/engine.md) */
    const int cpu = o->backend == ARB_ENGINE_CPU;
    static const char replay_noop[] = "pdl=1"; /* the GPU replay's noop parameters */
    if (!o->no_compute_only && strcmp(impl, "noop") != 0) {
        st = open_config(r, &r->cfgs[r->ncfgs], ARB_CFG_COMPUTE_ONLY, cpu ? "" : "noop", cpu ? "" : replay_noop, msg,
                         sizeof msg);
        r->ncfgs++;
    }
    if (st == ARB_OK && (o->profile[0] || o->tune)) {
        st = arb_run_open_profile(r, msg, sizeof msg); /* per-site choice (engine/run/run_profile.h) */
    } else if (st == ARB_OK) {
        /* a bare --impl noop on the GPU is the compute-only replay's noop (pdl=1); noop:pdl=0 the plain floor */
        const char *params = o->impl_given ? o->impl.params : "";
        if (strcmp(impl, "noop") == 0 && !o->impl.has_params && !cpu)
            params = replay_noop;
        st = open_config(r, &r->cfgs[r->ncfgs], ARB_CFG_IMPL, impl, params, msg, sizeof msg);
        r->ncfgs++;
    }
    if (st == ARB_OK && o->baseline_given) /* A/B after the runs (engine/run/run_ab.h) */
        st = arb_run_open_baseline(r, msg, sizeof msg);
    if (failed_everywhere(r, st != ARB_OK, msg, sizeof msg))
        goto out_close;
    if (m->rank == 0 && arb_run_open_rows(r, msg, sizeof msg) != 0) {
        fprintf(stderr, "arbench engine: %s\n", msg);
        MPI_Abort(m->world, 2);
    }
    if (m->rank == 0)
        r->sink = arb_run_rows_sink; /* the phases measure, the sink writes */
    if (m->rank == 0) /* after --out was accepted, named after the run (model/engine_outputs.h) */
        arb_engine_write_memplan(&plan, r->cfg.name, r->out, r->meta.run_id);
    rc = 0;
    for (unsigned i = 0; i < r->ncfgs && rc == 0; i++) {
        if (r->cfgs[i].role == ARB_CFG_BASELINE)
            continue; /* it runs interleaved with the implementation below */
        st = arb_run_config(r, &r->cfgs[i], msg, sizeof msg);
        if (st != ARB_OK) {
            if (m->rank == 0)
                fprintf(stderr, "arbench engine: %s run: %s\n", arb_cfg_role_names[r->cfgs[i].role], msg);
            rc = 1;
        }
    }
    if (rc == 0 && o->baseline_given && (st = arb_run_ab(r, msg, sizeof msg)) != ARB_OK) {
        if (m->rank == 0)
            fprintf(stderr, "arbench engine: A/B against --baseline: %s\n", msg);
        rc = 1;
    }
    if (m->rank == 0) {
        arb_run_print_table(r);
        arb_run_close_rows(r);
    }
    if (rc == 0 && arb_run_check_failed(r, msg, sizeof msg)) { /* the rows are kept: they say what disagreed */
        if (m->rank == 0)
            fprintf(stderr, "arbench engine: %s\n", msg);
        rc = 1;
    }
out_close:
    for (unsigned i = 0; i < r->ncfgs; i++)
        close_config(&r->cfgs[i]);
    arb_run_close_profile(r);
    arb_run_close_baseline(r);
out:
    arb_run_weights_close(r);
    free(r);
    return rc;
}
