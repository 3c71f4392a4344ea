/* SPDX-License-Identifier: MIT */
/* A shared module that is not an arbench plugin: it exports no arb_plugin_v2 (nor v1). */
int arb_not_a_plugin(int x);
__attribute__((visibility("default"))) int arb_not_a_plugin(int x) { return x + 1; }
