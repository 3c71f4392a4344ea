/* SPDX-License-Identifier: MIT */
/* The loader through real dlopen of built modules: good, wrong ABI, no symbol,
 * missing callback, missing file, lookup by bare name. argv: paths of the modules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "runtime/loader.h"
#include "tap.h"

static const char *good_path, *bad_abi_path, *no_symbol_path, *missing_cb_path, *v1_path;

static void t_good(void)
{
    arb_loaded_plugin_t lp;
    char err[4096] = "";
    TAP_CHECK(arb_plugin_load(good_path, &lp, err, sizeof err) == 0);
    if (!lp.plugin)
        return;
    TAP_CHECK(!strcmp(lp.plugin->name, "mpi-host"));
    TAP_CHECK(lp.plugin->abi_version == ARB_PLUGIN_ABI_VERSION);
    TAP_CHECK(lp.plugin->caps & ARB_CAP_HOST_MEMORY);
    arb_plugin_unload(&lp);
    TAP_CHECK(lp.handle == NULL);
}

static void t_by_name(void)
{
    arb_loaded_plugin_t lp;
    char err[4096] = "";
    TAP_CHECK(arb_plugin_load("mpi-host", &lp, err, sizeof err) == 0);
    if (lp.plugin)
        TAP_CHECK(strstr(lp.path, "arb-mpi-host.so") != NULL);
    arb_plugin_unload(&lp);
}

static void t_bad_abi(void)
{
    arb_loaded_plugin_t lp;
    char err[4096] = "";
    TAP_CHECK(arb_plugin_load(bad_abi_path, &lp, err, sizeof err) != 0);
    TAP_CHECK(strstr(err, "ABI version") != NULL);
    TAP_CHECK(strstr(err, bad_abi_path) != NULL);
}

static void t_no_symbol(void)
{
    arb_loaded_plugin_t lp;
    char err[4096] = "";
    TAP_CHECK(arb_plugin_load(no_symbol_path, &lp, err, sizeof err) != 0);
    TAP_CHECK(strstr(err, ARB_PLUGIN_SYMBOL) != NULL);
}

/* A version-1 module is refused by name, with the version this arbench loads. */
static void t_abi_v1(void)
{
    arb_loaded_plugin_t lp;
    char err[4096] = "";
    TAP_CHECK(arb_plugin_load(v1_path, &lp, err, sizeof err) != 0);
    TAP_CHECK(strstr(err, "ABI version 1") != NULL);
    TAP_CHECK(strstr(err, ARB_PLUGIN_SYMBOL) != NULL);
    TAP_CHECK(strstr(err, "rebuild") != NULL);
}

static void t_missing_callback(void)
{
    arb_loaded_plugin_t lp;
    char err[4096] = "";
    TAP_CHECK(arb_plugin_load(missing_cb_path, &lp, err, sizeof err) != 0);
    TAP_CHECK(strstr(err, "mandatory callback") != NULL);
}

static void t_unknown_name(void)
{
    arb_loaded_plugin_t lp;
    char err[8192] = "";
    TAP_CHECK(arb_plugin_load("does-not-exist", &lp, err, sizeof err) != 0);
    TAP_CHECK(strstr(err, "no plugin 'does-not-exist'") != NULL);
    TAP_CHECK(strstr(err, "tried") != NULL); /* lists what it tried */
    TAP_CHECK(arb_plugin_load("Bad Name!", &lp, err, sizeof err) != 0 && strstr(err, "lower-case"));
    TAP_CHECK(arb_plugin_load("/nonexistent/arb-x.so", &lp, err, sizeof err) != 0 && strstr(err, "no such file"));
}

static void t_env_path(void)
{
    /* ARBENCH_PLUGIN_PATH is searched first: point it at the test modules' folder. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", bad_abi_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    setenv("ARBENCH_PLUGIN_PATH", dir, 1);
    arb_loaded_plugin_t lp;
    char err[8192] = "";
    TAP_CHECK(arb_plugin_load("bad-abi", &lp, err, sizeof err) != 0 && strstr(err, "ABI version"));
    unsetenv("ARBENCH_PLUGIN_PATH");
}

/* The generated arb_known_plugins names every module built under collectives/ (and
 * nothing twice): a new plugin folder is known without editing src/runtime/loader.c. */
static void t_known_list(void)
{
    size_t n = 0;
    for (; arb_known_plugins[n]; n++)
        for (size_t j = 0; j < n; j++)
            TAP_CHECK(strcmp(arb_known_plugins[j], arb_known_plugins[n]) != 0);
    TAP_CHECK(n >= 2);
    int mpi_host = 0;
    for (size_t i = 0; i < n; i++)
        mpi_host |= strcmp(arb_known_plugins[i], "mpi-host") == 0; /* built in every configuration */
    TAP_CHECK(mpi_host);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "ls %s/*/arb-*.so 2>/dev/null", ARB_BUILD_PLUGIN_DIR);
    FILE *ls = popen(cmd, "r");
    char line[4096];
    int built = 0;
    while (ls && fgets(line, sizeof line, ls)) {
        char *name = strrchr(line, '/') + 5; /* after "/arb-" */
        name[strcspn(name, ".")] = '\0';
        int known = 0;
        for (size_t i = 0; i < n; i++)
            known |= strcmp(arb_known_plugins[i], name) == 0;
        if (!known)
            printf("# built but not in arb_known_plugins: %s\n", name);
        TAP_CHECK(known);
        built++;
    }
    if (ls)
        pclose(ls);
    TAP_CHECK(built >= 1);
    /* The default sweep's list is a subset, without the plugins that need parameters. */
    size_t nd = 0;
    for (; arb_default_plugins[nd]; nd++) {
        int known = 0;
        for (size_t i = 0; i < n; i++)
            known |= strcmp(arb_known_plugins[i], arb_default_plugins[nd]) == 0;
        TAP_CHECK(known);
        TAP_CHECK(strcmp(arb_default_plugins[nd], "modeled") != 0); /* needs table=PATH */
    }
    TAP_CHECK(nd >= 1 && nd <= n);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: test_loader GOOD BAD_ABI NO_SYMBOL MISSING_CALLBACK V1 [TEST]\n");
        return 2;
    }
    good_path = argv[1];
    bad_abi_path = argv[2];
    no_symbol_path = argv[3];
    missing_cb_path = argv[4];
    v1_path = argv[5];
    static const tap_test_t tests[] = {
        {"good", t_good},         {"by_name", t_by_name},
        {"bad_abi", t_bad_abi},   {"no_symbol", t_no_symbol},
        {"missing_callback", t_missing_callback}, {"unknown_name", t_unknown_name},
        {"env_path", t_env_path},   {"abi_v1", t_abi_v1},
        {"known_list", t_known_list},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc - 5, argv + 5);
}
