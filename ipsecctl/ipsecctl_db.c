/* ipsecctl/ipsecctl_db.c: how every ipsecctl command opens the SADB (with the access it needs, and
 * the reason when it cannot), libsadb's reason for a failed write, and `show` on a read-only SADB,
 * which the show, sa and policy commands share. Below the command files: they call in, it calls
 * only libsadb and libipsecctl. */
#include "config.h"

#include <string.h>

#include "ipsecctl/ipsecctl_cmd.h"

int ctl_open_db(const struct ctl_opts *o, int flags, struct sadb **db)
{
	char msg[256] = "";
	int rc = sadb_open(o->sadb_path, flags, NULL, db, msg, sizeof(msg));

	if (rc) {
		ctl_err("cannot open SADB %s: %s", o->sadb_path, msg[0] ? msg : strerror(-rc));
		return CTL_EXIT_ERR;
	}
	return CTL_EXIT_OK;
}

int ctl_open_rw(const struct ctl_opts *o, struct sadb **db)
{
	return ctl_open_db(o, SADB_RDWR | SADB_CREATE, db);
}

const char *ctl_db_err(struct sadb *db, int rc)
{
	return sadb_errmsg(db)[0] ? sadb_errmsg(db) : strerror(-rc);
}

int ctl_show_cmd(const struct ctl_opts *o, const char *what, int argc, char **argv)
{
	struct sadb *db;
	int rc;

	if (what && !strcmp(what, "bindings")) {
		if (argc) {
			ctl_err("show bindings takes no arguments");
			return CTL_EXIT_USAGE;
		}
		return ctl_show_bindings(o);
	}
	if (what && !strcmp(what, "cluster")) {
		if (argc) {
			ctl_err("show cluster takes no arguments");
			return CTL_EXIT_USAGE;
		}
		return ctl_show_cluster(o);
	}
	if ((rc = ctl_open_db(o, SADB_RDONLY, &db)))
		return rc;
	rc = ctl_show(db, o, what, argc, argv);
	sadb_close(db);
	return rc;
}
