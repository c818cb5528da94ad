/* ike/swan.h: the first include of every ike/ source file. It brings in xipsec's config.h (project
 * rule) and then strongSwan's configured config.h, which must precede every strongSwan header because
 * its defines (ME for --enable-mediation above all) change the layout of daemon_t and ike_sa_t.
 * The autoconf package macros are defined by both: strongSwan's win, as its headers use VERSION. */
#ifndef XIPSEC_IKE_SWAN_H
#define XIPSEC_IKE_SWAN_H

#include "config.h"

#include "config_undef.h"
/* strongSwan's utils.h defines _GNU_SOURCE empty; autoconf defines it 1: make them identical. */
#undef _GNU_SOURCE
#define _GNU_SOURCE

#ifndef XIPSEC_SWAN_CONFIG
#error "XIPSEC_SWAN_CONFIG (path of strongSwan's config.h) must be defined by the build"
#endif
#include XIPSEC_SWAN_CONFIG

#ifndef ME
#error "strongSwan's config.h lacks ME: Debian's libcharon is built with --enable-mediation"
#endif

#endif
