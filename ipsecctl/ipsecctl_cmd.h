/* ipsecctl/ipsecctl_cmd.h: what the command files of the ipsecctl program share: opening the SADB
 * with the access a command needs, libsadb's reason for a failure, and the commands that
 * ipsecctl/ipsecctl.c's command table dispatches to but that live in their own files
 * (ipsecctl_load.c: load and the one-statement writes; ipsecctl_edit.c: the sa and policy
 * subcommands). Every handler returns an ipsecctl exit code (CTL_EXIT_*). */
#ifndef XIPSEC_IPSECCTL_CMD_H
#define XIPSEC_IPSECCTL_CMD_H

#include "ipsecctl/ipsecctl.h"

/* ipsecctl_db.c */
/* Opens o->sadb_path (SADB_RDONLY, SADB_RDWR, ...); on failure says why and returns CTL_EXIT_ERR. */
int ctl_open_db(const struct ctl_opts *o, int flags, struct sadb **db);
/* For writers: creates the segment on first use, as xipsecd and xipsec-iked would. */
int ctl_open_rw(const struct ctl_opts *o, struct sadb **db);
/* libsadb's message for the last failure of db, else the errno text of rc (negative). */
const char *ctl_db_err(struct sadb *db, int rc);
/* `show WHAT [SPI...]` on a read-only SADB (show, sa list, policy list). */
int ctl_show_cmd(const struct ctl_opts *o, const char *what, int argc, char **argv);

/* load FILE: parse, validate and apply a whole file in one transaction. */
int ctl_cmd_load(const struct ctl_opts *o, int argc, char **argv);
/* reload FILE: the SADB's manually keyed SAs and policies become exactly the file's, in one
 * transaction; IKE's stay; an SA the file still has with the same keys keeps its runtime state. */
int ctl_cmd_reload(const struct ctl_opts *o, int argc, char **argv);
/* `sa add ...` / `policy add ...`: argv is the statement after its keyword kw ("sa", "policy");
 * ctx names the command in messages; update: the SAs replace those of the same identity. */
int ctl_cmd_stmt(const struct ctl_opts *o, const char *kw, const char *ctx, bool update, int argc,
		 char **argv);
int ctl_cmd_sa(const struct ctl_opts *o, int argc, char **argv);
int ctl_cmd_policy(const struct ctl_opts *o, int argc, char **argv);
/* `metrics ...` (ipsecctl_metrics.c), a raw command: argv[0] is "metrics". */
int ctl_cmd_metrics(int argc, char **argv);

#endif
