/* SPDX-License-Identifier: MIT */
/* arbench model fit|predict|check: the PCIe cost model (docs/model.md). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "base/outfile.h"
#include "costmodel/model_fit.h"
#include "costmodel/model_observe.h"
#include "costmodel/model_predict.h"
#include "base/sizes.h"
#include "results/results.h"

/* The default sweep plan's sizes (32K:56K:+2K and tokens 1..64 x 7168 x bf16) plus 1 MiB. */
#define DEFAULT_SIZES "14336,28672,32K:56K:+2K,57344,86016,114688,172032,229376,344064,458752,688128,917504,1M"

static void usage(FILE *f)
{
    fputs("usage: arbench model fit --fabric SPEC --out FIT.csv [--force] [--min-bytes 14336] [--max-bytes 1M] RESULTS.csv...\n"
          "       arbench model predict --fit FIT.csv --fabric SPEC [--xml TOPO.xml] --ranks N --out PRED.csv [--append] [--sizes LIST] [--fit-fabric SPEC]\n"
          "       arbench model check --fit FIT.csv [--fit-fabric SPEC] [--min-bytes 14336] [--max-bytes 1M] [--tolerance 0.25] [--points] RESULTS.csv...\n"
          "       arbench model check --fit FIT.csv --observations DIR [--tolerance 0.25]   (model/observations/: every recorded figure, with its source)\n"
          "  fit: constants from measured runs on the machine SPEC describes. predict: a results CSV (source=model, bands) for\n"
          "  N GPUs of SPEC (--xml: the GPU placement of an `arbench topo --export-xml` file, SPEC's constants). check: error of the model on measured runs; exit 1 when a gated group (NCCL, one-shots,\n"
          "  hoststaged) misses by more than the tolerance. Exit 2 on invalid input. docs/model.md\n"
          "       arbench model e2e --pred PRED.csv --out E2E.csv [...] ENGINE.csv...  (arbench model e2e --help)\n"
          "       arbench model compute --kernels REF-kernels.csv --gpu SPEC --gpu-ref SPEC [...]  (arbench model compute --help)\n",
          f);
}

typedef struct model_opts {
    const char *fabric, *fit_fabric, *fit, *out, *sizes, *xml, *observations;
    size_t min_bytes, max_bytes;
    int ranks, points, append, force;
    double tolerance;
} model_opts_t;

static int parse_opts(int argc, char **argv, model_opts_t *o)
{
    static const struct option opts[] = {
        {"fabric", required_argument, NULL, 'f'},    {"fit-fabric", required_argument, NULL, 'F'},
        {"fit", required_argument, NULL, 'c'},       {"out", required_argument, NULL, 'o'},
        {"sizes", required_argument, NULL, 's'},     {"min-bytes", required_argument, NULL, 'm'},
        {"max-bytes", required_argument, NULL, 'M'}, {"ranks", required_argument, NULL, 'n'},
        {"tolerance", required_argument, NULL, 't'}, {"points", no_argument, NULL, 'p'},
        {"xml", required_argument, NULL, 'x'},       {"help", no_argument, NULL, 'h'},
        {"append", no_argument, NULL, 'a'},          {"force", no_argument, NULL, 'y'},
        {"observations", required_argument, NULL, 'O'}, {NULL, 0, NULL, 0},
    };
    *o = (model_opts_t){.sizes = DEFAULT_SIZES, .min_bytes = 14336, .max_bytes = 1 << 20, .tolerance = 0.25};
    int c;
    char *end;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'f': o->fabric = optarg; break;
        case 'F': o->fit_fabric = optarg; break;
        case 'c': o->fit = optarg; break;
        case 'o': o->out = optarg; break;
        case 's': o->sizes = optarg; break;
        case 'x': o->xml = optarg; break;
        case 'O': o->observations = optarg; break;
        case 'p': o->points = 1; break;
        case 'a': o->append = 1; break;
        case 'y': o->force = 1; break;
        case 'm':
        case 'M':
            if (arb_parse_size(optarg, c == 'm' ? &o->min_bytes : &o->max_bytes)) {
                fprintf(stderr, "arbench model: --%s '%s': expected a size such as 14336, 14K or 1M\n", c == 'm' ? "min-bytes" : "max-bytes", optarg);
                return -1;
            }
            break;
        case 'n':
            o->ranks = (int)strtol(optarg, &end, 10);
            if (*end || o->ranks < 1 || o->ranks > ARB_MODEL_MAX_GPUS) {
                fprintf(stderr, "arbench model: --ranks '%s': expected a whole number from 1 to %d\n", optarg, ARB_MODEL_MAX_GPUS);
                return -1;
            }
            break;
        case 't':
            o->tolerance = strtod(optarg, &end);
            if (*end || !(o->tolerance > 0 && o->tolerance < 10)) {
                fprintf(stderr, "arbench model: --tolerance '%s': expected a relative error such as 0.25\n", optarg);
                return -1;
            }
            break;
        case 'h': return 1;
        default: return -1;
        }
    }
    return 0;
}

static int load_obs(int argc, char **argv, arb_obs_set_t *obs)
{
    char err[1024];
    if (optind >= argc) {
        fprintf(stderr, "arbench model: no results files given; expected one or more RESULTS.csv\n");
        return -1;
    }
    for (int i = optind; i < argc; i++)
        if (arb_obs_load(obs, argv[i], err, sizeof err)) {
            fprintf(stderr, "arbench model: %s\n", err);
            return -1;
        }
    return 0;
}

static void print_fit(const arb_fit_t *fit, FILE *f)
{
    fprintf(f, "fit on %s (%d ranks)\n", fit->fabric_file, fit->ranks);
    for (int m = 0; m < 3; m++)
        fprintf(f, "  %-7s launch %.3f us, flag %.3f us\n", arb_model_modes[m], fit->launch_us[m], fit->flag_us[m]);
    fprintf(f, "  %-10s %-52s %-7s %-4s %9s %8s %9s %7s %3s\n", "impl", "params", "mode", "via", "offset_us",
            "hop_us", "bw_gbs", "rel_err", "n");
    for (size_t i = 0; i < fit->n; i++) {
        const arb_fit_entry_t *e = &fit->e[i];
        fprintf(f, "  %-10s %-52.52s %-7s %-4s %9.3f %8.3f %9.2f %6.1f%% %3d\n", e->impl, e->params, e->mode,
                e->transport == ARB_TRANSPORT_SHM ? "shm" : "p2p", e->offset_us, e->hop_us, e->bw_gbs,
                100 * e->rel_err, e->points);
    }
}

static int do_fit(int argc, char **argv, const model_opts_t *o)
{
    arb_fabric_t fab;
    arb_obs_set_t obs = {0};
    arb_fit_t fit;
    char err[1024];
    int rc = 2;
    if (!o->fabric || !o->out) {
        fprintf(stderr, "arbench model fit: needs --fabric SPEC (the measured machine) and --out FIT.csv\n");
        return 2;
    }
    const arb_io_file_t fit_inputs[] = {{"--fabric", o->fabric}};
    if (o->append || arb_out_check_inputs("--out", o->out, o->force ? ARB_OUT_FORCE : ARB_OUT_NEW, "--force", fit_inputs,
                                          1, argv + optind, (size_t)(argc - optind), "results file", err, sizeof err)) {
        fprintf(stderr, "arbench model fit: %s\n", o->append ? "--append: a fit is written whole; give --force to replace an existing one" : err);
        return 2;
    }
    if (arb_fabric_read(o->fabric, &fab, err, sizeof err)) {
        fprintf(stderr, "arbench model fit: --fabric %s\n", err);
        return 2;
    }
    if (load_obs(argc, argv, &obs))
        goto err_free_obs;
    if (arb_model_fit(&obs, &fab, (double)o->min_bytes, (double)o->max_bytes, &fit, err, sizeof err)) {
        fprintf(stderr, "arbench model fit: %s\n", err);
        goto err_free_obs;
    }
    print_fit(&fit, stdout);
    rc = 0;
    if (arb_fit_write(&fit, o->out, err, sizeof err)) {
        fprintf(stderr, "arbench model fit: --out %s\n", err);
        rc = 1;
    }
    arb_fit_free(&fit);
err_free_obs:
    arb_obs_free(&obs);
    return rc;
}

/* The fit and the spec of the machine it was measured on. */
static int load_fit(const model_opts_t *o, arb_fit_t *fit, arb_fabric_t *fit_fab)
{
    char err[1024];
    if (!o->fit) {
        fprintf(stderr, "arbench model: needs --fit FIT.csv (written by `arbench model fit`)\n");
        return -1;
    }
    if (arb_fit_read(o->fit, fit, err, sizeof err)) {
        fprintf(stderr, "arbench model: --fit %s\n", err);
        return -1;
    }
    const char *spec = o->fit_fabric ? o->fit_fabric : fit->fabric_file;
    if (arb_fabric_read(spec, fit_fab, err, sizeof err)) {
        fprintf(stderr, "arbench model: the fit's fabric %s (give --fit-fabric SPEC)\n", err);
        arb_fit_free(fit);
        return -1;
    }
    return 0;
}

static void join_argv(int argc, char **argv, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "arbench");
    for (int i = 0; i < argc && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, " %s", argv[i]);
}

static int do_predict(int argc, char **argv, const model_opts_t *o)
{
    arb_fit_t fit;
    arb_fabric_t fit_fab, fab;
    char err[1024], args[2048];
    static size_t sizes[ARB_MAX_SIZES];
    size_t nsizes, nrows;
    if (!o->fabric || !o->out || !o->ranks) {
        fprintf(stderr, "arbench model predict: needs --fabric SPEC (the target), --ranks N and --out PRED.csv\n");
        return 2;
    }
    if (arb_parse_size_list(o->sizes, sizes, ARB_MAX_SIZES, &nsizes, err, sizeof err)) {
        fprintf(stderr, "arbench model predict: --sizes %s\n", err);
        return 2;
    }
    if (arb_fabric_read(o->fabric, &fab, err, sizeof err)) {
        fprintf(stderr, "arbench model predict: --fabric %s\n", err);
        return 2;
    }
    if (o->xml && arb_fabric_apply_xml(&fab, o->xml, err, sizeof err)) {
        fprintf(stderr, "arbench model predict: --xml %s\n", err);
        return 2;
    }
    if (o->ranks > fab.ngpus) {
        fprintf(stderr, "arbench model predict: --ranks %d: the fabric %s has %d GPUs\n", o->ranks, fab.name, fab.ngpus);
        return 2;
    }
    if (load_fit(o, &fit, &fit_fab))
        return 2;
    const arb_io_file_t pred_inputs[] = {{"--fit", o->fit}, {"--fabric", o->fabric}, {"--xml", o->xml},
                                         {"--fit-fabric", o->fit_fabric ? o->fit_fabric : fit.fabric_file}};
    if (o->force ||
        arb_out_check("--out", o->out, o->append ? ARB_OUT_APPEND : ARB_OUT_NEW, "--append", pred_inputs, 4, err, sizeof err) ||
        arb_out_check_rows("--out", o->out, arb_result_col_names, ARB_COL_COUNT, err, sizeof err)) {
        fprintf(stderr, "arbench model predict: %s\n", o->force ? "--force: predictions are rows; give --append to add them to an existing file" : err);
        arb_fit_free(&fit);
        return 2;
    }
    join_argv(argc, argv, args, sizeof args);
    int rc = 0;
    if (arb_model_write_predictions(&fit, o->fit, &fit_fab, &fab, o->ranks, sizes, nsizes, o->out, args, &nrows, err,
                                    sizeof err)) {
        fprintf(stderr, "arbench model predict: --out %s\n", err);
        rc = 1;
    } else {
        arb_model_print_summary(&fit, &fit_fab, &fab, o->ranks, sizes, nsizes, "graph", stdout);
        printf("arbench model predict: %zu rows for %d ranks of %s (%s), wrote %s\n", nrows, o->ranks, fab.name,
               fab.label, o->out);
    }
    arb_fit_free(&fit);
    return rc;
}

static int do_check(int argc, char **argv, const model_opts_t *o)
{
    arb_fit_t fit;
    arb_fabric_t fit_fab;
    arb_obs_set_t obs = {0};
    char err[1024];
    int rc = 2;
    if (load_fit(o, &fit, &fit_fab))
        return 2;
    if (o->observations) { /* the recorded observations, with their sources; exit 1 when one fails */
        arb_observe_tally_t t;
        if (optind < argc)
            fprintf(stderr, "arbench model check: --observations: results files ignored (give them without --observations)\n");
        if (arb_model_check_observations(&fit, &fit_fab, o->observations, o->tolerance, stdout, &t, err, sizeof err)) {
            fprintf(stderr, "arbench model check: %s\n", err);
            rc = 2;
        } else {
            rc = t.fail > 0;
        }
        arb_fit_free(&fit);
        return rc;
    }
    if (load_obs(argc, argv, &obs))
        goto err_free;
    int failing = 0;
    if (arb_model_check(&fit, &fit_fab, &obs, (double)o->min_bytes, (double)o->max_bytes, o->tolerance, o->points,
                        stdout, &failing, err, sizeof err) != ARB_OK) {
        fprintf(stderr, "arbench model check: %s\n", err);
        rc = 2;
    } else {
        rc = failing > 0;
    }
err_free:
    arb_obs_free(&obs);
    arb_fit_free(&fit);
    return rc;
}

int cmd_model(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "e2e"))
        return cmd_model_e2e(argc - 1, argv + 1);
    if (!strcmp(sub, "compute"))
        return cmd_model_compute(argc - 1, argv + 1);
    model_opts_t o;
    int p = parse_opts(argc - 1, argv + 1, &o);
    if (p) {
        usage(p > 0 ? stdout : stderr);
        return p > 0 ? 0 : 2;
    }
    optind += 1; /* parse_opts saw argv + 1 */
    if (!strcmp(sub, "fit"))
        return do_fit(argc, argv, &o);
    if (!strcmp(sub, "predict"))
        return do_predict(argc, argv, &o);
    if (!strcmp(sub, "check"))
        return do_check(argc, argv, &o);
    fprintf(stderr, "arbench model: unknown subcommand '%s'; expected fit, predict, check, e2e or compute\n", sub);
    return 2;
}
