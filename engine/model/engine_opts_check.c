/* SPDX-License-Identifier: MIT */
/* `arbench engine`'s options against each other, once all are read (engine/model/engine_opts.h's
 * arb_engine_opts_settle): the refusals of options given together or where their form does not run,
 * and the defaults dropped where it does not. */
#include <stdio.h>
#include <string.h>

#include "model/engine_opts.h"

/* "OPT with WHERE: WHAT (give FORMS, or INSTEAD)": `opt` given where the GPU's launches it belongs to
 * do not run (WHERE: --backend cpu, else the step form given); -1 with the message in err. */
static int form_refusal(const arb_engine_opts_t *o, const char *opt, const char *what, const char *forms,
                        const char *instead, char *err, size_t len)
{
    snprintf(err, len, "%s with %s: %s (give --backend gpu %s, or %s)", opt,
             o->backend == ARB_ENGINE_CPU                ? "--backend cpu"
             : o->step_form == ARB_STEP_PERSISTENT ? "--step-form persistent"
                                                   : "--step-form persistent-attn",
             what, forms, instead);
    return -1;
}

/* `opt` given outside the GPU's launches form: its way out `OPT none`. */
static int launches_only(const arb_engine_opts_t *o, const char *opt, const char *what, char *err, size_t len)
{
    char instead[64];
    snprintf(instead, sizeof instead, "%s none", opt);
    return form_refusal(o, opt, what, "--step-form launches", instead, err, len);
}

/* An option of the GPU's MoE launches (the launches and persistent-attn forms) given where there are
 * none (--backend cpu or --step-form persistent). */
static int moe_launches_only(const arb_engine_opts_t *o, const char *opt, const char *what, const char *instead,
                             char *err, size_t len)
{
    return form_refusal(o, opt, what, "with --step-form launches or persistent-attn", instead, err, len);
}

int arb_engine_opts_settle(arb_engine_opts_t *o, char *err, size_t len)
{
    if ((o->profile[0] || o->tune) && o->impl_given) {
        snprintf(err, len, "--impl with --%s: the profile chooses the implementation at each call site (give one or the other)", o->tune ? "tune" : "profile");
        return -1;
    }
    if (o->draft_dir[0] && o->naccept) {
        snprintf(err, len, "--accept-rate with --draft-dir: the draft head's acceptance is measured, --accept-rate plants one (give one or the other)");
        return -1;
    }
    if (o->weights_dir[0] && o->config_given) {
        snprintf(err, len, "--config with --weights-dir: the model is the checkpoint's DIR/config.json (give one or the other)");
        return -1;
    }
    if (o->weights_dir[0])
        snprintf(o->config, sizeof o->config, "%.1000s/config.json", o->weights_dir);
    if (o->backend == ARB_ENGINE_CPU && o->step_form != ARB_STEP_LAUNCHES) {
        snprintf(err, len, "--step-form persistent with --backend cpu: the persistent form is the GPU step's (give --backend gpu)");
        return -1;
    }
    const int launches = o->backend == ARB_ENGINE_GPU && o->step_form == ARB_STEP_LAUNCHES;
    if (o->l2_ahead && !launches)
        return launches_only(o, "--l2-ahead", "the pulls are kernels' of the GPU's launches form", err, len);
    if (!o->l2_side_given && !launches)
        o->l2_side = 0; /* the default's branch is the GPU's launches form's: dropped elsewhere */
    if (o->side_upto != 8 && !o->l2_side) {
        snprintf(err, len, "--l2-side-upto %u with no side branch (--l2-side none, --backend cpu or a persistent "
                 "form): nothing to limit (give --backend gpu --step-form launches, or leave it out)", o->side_upto);
        return -1;
    }
    if (o->l2_side && !launches)
        return launches_only(o, "--l2-side", "the side branch is the GPU's launches form's", err, len);
    if ((o->wave_fit || o->wave_from != 1) && !launches)
        return launches_only(o, "--wave-fit", "the folded grids are the GPU's launches form's", err, len);
    if (o->fuse && o->fuse_given && !launches)
        return launches_only(o, "--fuse", "the fused kernels are the GPU's launches form's", err, len);
    if (o->attn_wide_from && !launches)
        return form_refusal(o, "--attn-wide-from", "the wide attention CTAs are the GPU's launches form's",
                            "--step-form launches", "leave it out", err, len);
    if ((o->attn_min_rows || o->attn_fill) && o->backend == ARB_ENGINE_CPU) {
        snprintf(err, len, "%s with --backend cpu: the row groups are the GPU attention's (give --backend gpu, or leave "
                 "it out)", o->attn_min_rows ? "--attn-min-rows" : "--attn-fill");
        return -1;
    }
    const int moe_launches = o->backend == ARB_ENGINE_GPU && o->step_form != ARB_STEP_PERSISTENT;
    if (o->moe_stage && !moe_launches)
        return moe_launches_only(o, "--moe-stage smem", "the staged gate/up is the GPU's MoE launches'",
                                 "--moe-stage none", err, len);
    if (o->moe_order && !moe_launches) {
        char opt[64];
        snprintf(opt, sizeof opt, "--moe-order %s", arb_engine_opts_moe_order_name(o->moe_order));
        return moe_launches_only(o, opt, "the order is the GPU's MoE gate/up launch's", "leave --moe-order out", err,
                                 len);
    }
    if (!o->moe_early_given && !moe_launches)
        o->moe_early = 0; /* the default's guess is the GPU's MoE down launch's: dropped elsewhere */
    if (o->moe_early >= 3 && !moe_launches) {
        char opt[64];
        snprintf(opt, sizeof opt, "--moe-early %s", arb_engine_opts_moe_early_name(o->moe_early));
        return moe_launches_only(o, opt, "the guessed selection is the GPU's MoE down launch's",
                                 "leave --moe-early out", err, len);
    }
    if (o->moe_early == 1 || o->moe_early == 2) { /* withdrawn everywhere: results/engine-h200/6162998-moe-early/README.md */
        snprintf(err, len,
                 "%s: withdrawn: with --moe-early on the GPU disagreed with the CPU reference (tiny --check-steps: max "
                 "|logit diff| 0.274 > 0.25, verify agree 15/24; results/engine-h200/6162998-moe-early/; a race that "
                 "needs PDL: results/engine-h100/f5918db-diag/). With on "
                 "and l2 the MoE down reads the router's selection before its PDL wait, after gate/up's trigger, "
                 "which NVIDIA documents as leave to begin scheduling, not as an ordering of memory: only the wait "
                 "orders it (give --moe-early spec, the default, which checks its early read after the wait, or off; engine_gpu_bench --moe-early still times on and l2)",
                 o->moe_early == 2 ? "--moe-early l2" : "--moe-early on");
        return -1;
    }
    if (o->check_steps && o->backend == ARB_ENGINE_CPU) {
        snprintf(err, len, "--check-steps with --backend cpu: the check compares the GPU with the CPU reference; on "
                 "the CPU backend it would compare the reference with itself (give --backend gpu)");
        return -1;
    }
    if (o->check_steps && o->impl_given && strcmp(o->impl.name, "noop") == 0) {
        snprintf(err, len, "--check-steps with --impl noop: noop leaves the partial sums out of the residual, so the "
                 "GPU computes another function than the CPU reference (give --impl nccl: on one rank an identity "
                 "all-reduce, the reference's arithmetic)");
        return -1;
    }
    if (o->profile[0] && o->tune) {
        snprintf(err, len, "--profile with --tune: --tune measures its own profile (give one or the other)");
        return -1;
    }
    return 0;
}
