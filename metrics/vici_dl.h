/* metrics/vici_dl.h: strongSwan's libvici, loaded at run time. Debian ships libvici in
 * strongswan-swanctl, which a gateway keyed by hand does not need: ipsecctl, the exporter and
 * xipsec-snmpd therefore do not link it, and every VICI user (`ipsecctl ike`, metrics_ike.c) calls it
 * through the table here, the one place that loads it.
 *
 * Contract: vici_dl() returns the table, loading the library on the first call (thread-safe; the
 * library is never unloaded: libstrongswan keeps threads and state of its own). NULL when it cannot
 * be loaded; vici_dl_error() then says why (dlerror's text). Types and constants come from
 * libvici.h as usual, so the table's entries have exactly libvici's prototypes.
 *
 * The library is $XIPSEC_VICI_LIB when set (for tests: a path that does not exist stands for a
 * host without strongswan-swanctl; ignored in a secure exec, as ld.so's LD_* are), else
 * XIPSEC_VICI_LIB_PATH from configure. */
#ifndef XIPSEC_VICI_DL_H
#define XIPSEC_VICI_DL_H

#include <libvici.h>

#define VICI_DL_MISSING "IKE commands need strongswan-swanctl (libvici): apt install strongswan-swanctl"

struct vici_dl {
	__typeof__(vici_init) *init;
	__typeof__(vici_deinit) *deinit;
	__typeof__(vici_connect) *connect;
	__typeof__(vici_disconnect) *disconnect;
	__typeof__(vici_register) *register_event;
	__typeof__(vici_begin) *begin;
	__typeof__(vici_add_key_valuef) *add_key_valuef;
	__typeof__(vici_submit) *submit;
	__typeof__(vici_free_req) *free_req;
	__typeof__(vici_free_res) *free_res;
	__typeof__(vici_parse) *parse;
	__typeof__(vici_parse_name) *parse_name;
	__typeof__(vici_parse_value) *parse_value;
	__typeof__(vici_find_str) *find_str;
};

const struct vici_dl *vici_dl(void);
const char *vici_dl_error(void);

#endif
