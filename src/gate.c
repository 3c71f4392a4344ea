/* SPDX-License-Identifier: MIT */
/* Placeholder: replaced by the analysis module (arbench gate). */
