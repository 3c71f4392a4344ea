/* SPDX-License-Identifier: MIT */
/* Unit test of the NCCL plugin's parameter parser and describe string (no CUDA). */
#include <string.h>

#include "nccl_params.h"
#include "tap.h"

static void expect_good(const char *params, const char *described)
{
    arb_nccl_params_t p;
    char why[512] = "", buf[160];
    arb_status_t st = arb_nccl_params_parse(params, &p, why, sizeof why);
    arb_nccl_params_describe(&p, NULL, NULL, 22803, buf, sizeof buf);
    tap_ok(st == ARB_OK && strcmp(buf, described) == 0, "'%s' parses and describes as '%s' (got status %d, '%s' %s)", params, described, (int)st, buf, why);
}

/* Every fragment in `mentions` (NULL-terminated) must appear in the message. */
static void expect_bad(const char *params, const char *const *mentions)
{
    arb_nccl_params_t p;
    char why[512] = "";
    arb_status_t st = arb_nccl_params_parse(params, &p, why, sizeof why);
    int named = 1;
    for (const char *const *m = mentions; *m; m++)
        named &= strstr(why, *m) != NULL;
    tap_ok(st == ARB_ERR_INVALID && named && !strchr(why, '\n'), "'%s' is rejected with one line naming the problem: %s", params, why);
    tap_ok(!p.algo && !p.proto && !p.channels, "'%s': nothing half-parsed is left behind", params);
}

int main(void)
{
    expect_good("", "algo=auto,proto=auto,nccl=2.28.3");
    expect_good("algo=auto,proto=auto", "algo=auto,proto=auto,nccl=2.28.3");
    expect_good("algo=Ring,proto=LL", "algo=Ring,proto=LL,nccl=2.28.3");
    expect_good("algo=ring,proto=ll128", "algo=Ring,proto=LL128,nccl=2.28.3");
    expect_good("proto=SIMPLE,algo=TREE", "algo=Tree,proto=Simple,nccl=2.28.3");
    expect_good("algo=Tree,proto=LL,channels=2", "algo=Tree,proto=LL,channels=2,nccl=2.28.3");
    expect_good("channels=64", "algo=auto,proto=auto,channels=64,nccl=2.28.3");

    expect_bad("algo=Bogus", (const char *const[]){"algo 'Bogus'", "auto, Ring, Tree", NULL});
    expect_bad("proto=LL256", (const char *const[]){"proto 'LL256'", "auto, LL, LL128, Simple", NULL});
    expect_bad("colour=red", (const char *const[]){"unknown parameter 'colour'", "algo, proto, channels", NULL});
    expect_bad("ALGO=Ring", (const char *const[]){"unknown parameter 'ALGO'", NULL});
    expect_bad("channels=0", (const char *const[]){"channels '0'", "1 to 64", NULL});
    expect_bad("channels=65", (const char *const[]){"channels '65'", NULL});
    expect_bad("channels=2x", (const char *const[]){"channels '2x'", NULL});
    expect_bad("channels=", (const char *const[]){"channels ''", NULL});
    expect_bad("algo=Ring,algo=Tree", (const char *const[]){"parameter algo given twice", NULL});
    expect_bad("algo", (const char *const[]){"'algo' is not key=value", NULL});
    expect_bad("=Ring", (const char *const[]){"'=Ring' is not key=value", NULL});
    expect_bad("algo=Ring,", (const char *const[]){"empty item", NULL});
    expect_bad("algo=Ring,,proto=LL", (const char *const[]){"empty item", NULL});
    expect_bad("algo=Ring proto=LL", (const char *const[]){"algo 'Ring proto=LL'", NULL});

    /* The user's own NCCL_ALGO/NCCL_PROTO show as "env" where the variant leaves the
     * choice to NCCL, and never override what a variant forces. */
    arb_nccl_params_t p;
    char why[256], buf[160];
    arb_nccl_params_parse("", &p, why, sizeof why);
    arb_nccl_params_describe(&p, "Tree", NULL, 22809, buf, sizeof buf);
    tap_ok(strcmp(buf, "algo=env,proto=auto,nccl=2.28.9") == 0, "user NCCL_ALGO with the auto variant describes as algo=env (got '%s')", buf);
    arb_nccl_params_parse("algo=Ring", &p, why, sizeof why);
    arb_nccl_params_describe(&p, "Tree", "LL", 22809, buf, sizeof buf);
    tap_ok(strcmp(buf, "algo=Ring,proto=env,nccl=2.28.9") == 0, "a forced algo wins over the user's NCCL_ALGO (got '%s')", buf);
    tap_ok(arb_nccl_params_forced(&p), "algo=Ring counts as forced");
    arb_nccl_params_parse("algo=auto", &p, why, sizeof why);
    tap_ok(!arb_nccl_params_forced(&p), "algo=auto does not count as forced");

    arb_nccl_version_str(22803, buf, sizeof buf);
    tap_ok(strcmp(buf, "2.28.3") == 0, "version code 22803 is 2.28.3 (got '%s')", buf);
    arb_nccl_version_str(2708, buf, sizeof buf);
    tap_ok(strcmp(buf, "2.7.8") == 0, "old-style version code 2708 is 2.7.8 (got '%s')", buf);
    return tap_done();
}
