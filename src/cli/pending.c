/* Subcommands whose implementation is not written yet. */
#include "cli.h"

int cmd_probe(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "vzcaps probe: not implemented yet\n"); return 1; }
int cmd_verify(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "vzcaps verify: not implemented yet\n"); return 1; }
int verify_gate(const struct cfg_opts *o) { (void)o; return 0; }
