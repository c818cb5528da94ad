/* metrics/vici_dl.c: loads strongSwan's libvici with dlopen and resolves the functions xipsec's VICI
 * users call (vici_dl.h). A host without strongswan-swanctl has no libvici: the table is then NULL
 * and the callers leave IKE out (metrics) or say which package to install (`ipsecctl ike`). */
#include "config.h"

#ifdef XIPSEC_HAVE_VICI
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/vici_dl.h"

static struct vici_dl table;
static const struct vici_dl *loaded;
static char load_err[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

_Static_assert(sizeof(table.init) == sizeof(void *), "dlsym's result is copied into the table");

#define SYM(field, name) { name, &table.field, sizeof(table.field) }
static const struct {
	const char *name;
	void *slot;
	size_t size;
} syms[] = {
	SYM(init, "vici_init"), SYM(deinit, "vici_deinit"), SYM(connect, "vici_connect"),
	SYM(disconnect, "vici_disconnect"), SYM(register_event, "vici_register"),
	SYM(begin, "vici_begin"), SYM(add_key_valuef, "vici_add_key_valuef"),
	SYM(submit, "vici_submit"), SYM(free_req, "vici_free_req"), SYM(free_res, "vici_free_res"),
	SYM(parse, "vici_parse"), SYM(parse_name, "vici_parse_name"),
	SYM(parse_value, "vici_parse_value"), SYM(find_str, "vici_find_str"),
};

static void load(void)
{
	/* ignored in a set-user-ID or capability-raising exec, as ld.so ignores LD_LIBRARY_PATH */
	const char *path = secure_getenv("XIPSEC_VICI_LIB");
	void *lib, *sym;

	if (!path || !*path)
		path = XIPSEC_VICI_LIB_PATH;
	if (!(lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(load_err, sizeof(load_err), "%s", dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		if (!(sym = dlsym(lib, syms[i].name))) {
			snprintf(load_err, sizeof(load_err), "%s: %s", path, dlerror());
			dlclose(lib);
			return;
		}
		/* ISO C has no conversion from void * to a function pointer; POSIX guarantees dlsym's
		 * result is one, and copying its representation says so without a cast. */
		memcpy(syms[i].slot, &sym, syms[i].size);
	}
	loaded = &table;
}

const struct vici_dl *vici_dl(void)
{
	pthread_once(&once, load);
	return loaded;
}

const char *vici_dl_error(void)
{
	return load_err;
}
#endif /* XIPSEC_HAVE_VICI */
