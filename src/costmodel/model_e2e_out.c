/* SPDX-License-Identifier: MIT */
/* arbench model e2e's outputs: the e2e-1 CSV (written whole through base/outfile.h) and the
 * printed tables (model_e2e.h, docs/model.md). */
#include "costmodel/model_e2e.h"

#include <math.h>
#include <stdio.h>

#include "base/outfile.h"

static const char e2e_header[] =
    "schema,source,choice,mode,phase,spec_k,accept_rate,read_gbs_h200,compute_h200_us,compute_us,compute_lo_us,"
    "compute_hi_us,allreduce_us,allreduce_lo_us,allreduce_hi_us,step_us,step_lo_us,step_hi_us,tok_s,tok_s_lo,"
    "tok_s_hi,break_even,break_even_lo,break_even_hi,fabric,ranks,pred_table,pred_argv,engine_csv,target_read_gbs,"
    "h200_peak_gbs,allreduce_share,allreduce_share_lo,allreduce_share_hi,saving_vs_nccl_us,saving_vs_nccl_lo_us,"
    "saving_vs_nccl_hi_us,verify_allreduce_us,verify_allreduce_lo_us,verify_allreduce_hi_us,verify_saving_vs_nccl_us,"
    "verify_saving_vs_nccl_lo_us,verify_saving_vs_nccl_hi_us,kernels_csv,gpu_spec,gpu_ref_spec,argv,note\n";

static void put_quoted(FILE *f, const char *s)
{
    fputs(",\"", f);
    for (const char *c = s; *c; c++)
        fputs(*c == '"' ? "\"\"" : (char[2]){*c, 0}, f);
    fputs("\"", f);
}

static void put_num(FILE *f, double v)
{
    if (isnan(v))
        fputs(",", f);
    else if (isinf(v))
        fputs(",inf", f);
    else
        fprintf(f, ",%.6g", v);
}

arb_status_t arb_e2e_write(const arb_e2e_result_t *res, const char *path, const char *argv_joined, char *err,
                           size_t err_len)
{
    arb_outfile_t of;
    FILE *f = arb_outfile_open(&of, "--out", path, err, err_len);
    if (!f)
        return ARB_ERR_SYSTEM;
    fputs(e2e_header, f);
    for (size_t i = 0; i < res->nrows; i++) {
        const arb_e2e_row_t *r = &res->rows[i];
        fprintf(f, "e2e-1,model,\"%s\",%s,%s,", r->choice, r->mode, r->phase);
        if (r->spec_k)
            fprintf(f, "%d", r->spec_k);
        put_num(f, r->spec_k ? r->accept_rate : NAN);
        put_num(f, r->read_gbs_h200);
        put_num(f, r->compute_h200_us);
        const arb_e2e_band_t *b[] = {&r->compute_us, &r->allreduce_us, &r->step_us, &r->tok_s, &r->break_even,
                                     &r->allreduce_share, &r->saving_us, &r->verify_allreduce_us, &r->verify_saving_us};
        for (int k = 0; k < 9; k++) {
            put_num(f, b[k]->v);
            put_num(f, b[k]->lo);
            put_num(f, b[k]->hi);
            if (k == 4) { /* what was predicted, and from what */
                put_quoted(f, res->fabric);
                fprintf(f, ",%d", res->ranks);
                put_quoted(f, res->pred_csv);
                put_quoted(f, res->pred_argv);
                put_quoted(f, r->engine_csv);
                put_num(f, res->target_read_gbs);
                put_num(f, res->h200_peak_gbs);
            }
        }
        put_quoted(f, res->kernels_csv);
        put_quoted(f, res->gpu_spec);
        put_quoted(f, res->gpu_ref_spec);
        put_quoted(f, argv_joined);
        if (res->compute_floor_x > 0)
            fprintf(f, ",\"scenario, not measured: compute set to %g x the step's bytes over the target's bandwidth, "
                       "all-reduce replayed (docs/model.md)\"\n",
                    res->compute_floor_x);
        else
            fputs(res->kernels_csv[0]
                      ? ",\"predicted, not measured: compute by kernel family (streaming part at the target's bandwidth, the rest kept), all-reduce replayed (docs/model.md)\"\n"
                      : ",\"predicted, not measured: compute scaled by read bandwidth, all-reduce replayed (docs/model.md)\"\n",
                  f);
    }
    if (ferror(f)) {
        arb_outfile_discard(&of);
        ARB_RAISE(ARB_ERR_SYSTEM, err, err_len, "%s: write failed", path);
    }
    if (arb_outfile_commit(&of, err, err_len) != 0)
        return ARB_ERR_SYSTEM;
    return ARB_OK;
}

void arb_e2e_print(const arb_e2e_result_t *res, const arb_e2e_opts_t *o, FILE *f)
{
    if (o->compute_floor_x > 0)
        fprintf(f, "SCENARIO (not measured, not predicted): each step's compute set to %g x its bytes over %.0f GB/s (no band),\n"
                   "the draft's scaled as decode's, all-reduce replayed (band: prediction table):\n",
                o->compute_floor_x, o->target_read_gbs);
    else if (o->kernels_csv)
        fprintf(f, "PREDICTED (not measured), compute by kernel family from %s: streaming part x read_gbs_H200/%.0f GB/s, the rest kept\n"
                   "(band: launch/latency +-%.0f%%, time beyond each family's floor x %.2f..%.2f (instruction rate), streaming at the\n"
                   "target's peak .. the H200's fraction of its peak %.0f), all-reduce replayed (band: prediction table):\n",
                o->kernels_csv, o->target_read_gbs, 100 * o->launch_band, fmin(1 - o->launch_band, o->issue_lo > 0 ? o->issue_lo : 1),
                fmax(1 + o->launch_band, o->issue_hi > 0 ? o->issue_hi : 1), o->h200_peak_gbs);
    else
        fprintf(f, "PREDICTED (not measured), compute x read_gbs_H200/%.0f GB/s (band: streaming part only .. H200 peak %.0f/%.0f), "
                   "all-reduce replayed (band: prediction table):\n", o->target_read_gbs, o->h200_peak_gbs, o->target_read_gbs);
    fprintf(f, "  %-5s %-16s %-44s %-22s %-22s %-20s %s\n", "mode", "phase", "choice", "step/cycle us (band)",
            "all-reduce us (band)", "tok/s (band)", "break-even p (band)");
    for (size_t i = 0; i < res->nrows; i++) {
        const arb_e2e_row_t *r = &res->rows[i];
        char ph[32], be[48] = "";
        snprintf(ph, sizeof ph, r->spec_k ? "spec k=%d p=%.2f" : "decode", r->spec_k, r->accept_rate);
        if (r->spec_k)
            snprintf(be, sizeof be, "%.3f (%.3f-%.3f)", r->break_even.v, r->break_even.lo, r->break_even.hi);
        fprintf(f, "  %-5s %-16s %-44.44s %7.0f (%6.0f-%6.0f) %7.0f (%5.0f-%5.0f)  %6.1f (%5.1f-%5.1f) %s\n", r->mode,
                ph, r->choice, r->step_us.v, r->step_us.lo, r->step_us.hi, r->allreduce_us.v, r->allreduce_us.lo,
                r->allreduce_us.hi, r->tok_s.v, r->tok_s.lo, r->tok_s.hi, be);
    }
    fprintf(f, "fabric %s, %d ranks, from %s (%s); without the compute scaling (all-reduce replayed, band: the table's,\n"
               "each saving's ends from opposite ends of the two bands):\n", res->fabric, res->ranks, res->pred_csv,
            res->pred_argv);
    fprintf(f, "  %-5s %-16s %-44s %-26s %-26s %s\n", "mode", "phase", "choice", "saving vs NCCL us (band)",
            "per verify us (band)", "all-reduce share (band)");
    for (size_t i = 0; i < res->nrows; i++) {
        const arb_e2e_row_t *r = &res->rows[i];
        char ph[32], sv[48] = "-", vv[48] = "-";
        snprintf(ph, sizeof ph, r->spec_k ? "spec k=%d p=%.2f" : "decode", r->spec_k, r->accept_rate);
        if (!isnan(r->saving_us.v))
            snprintf(sv, sizeof sv, "%.0f (%.0f .. %.0f)", r->saving_us.v, r->saving_us.lo, r->saving_us.hi);
        if (!isnan(r->verify_saving_us.v))
            snprintf(vv, sizeof vv, "%.0f (%.0f .. %.0f)", r->verify_saving_us.v, r->verify_saving_us.lo,
                     r->verify_saving_us.hi);
        fprintf(f, "  %-5s %-16s %-44.44s %-26s %-26s %.3f (%.3f-%.3f)\n", r->mode, ph, r->choice, sv, vv,
                r->allreduce_share.v, r->allreduce_share.lo, r->allreduce_share.hi);
    }
}
