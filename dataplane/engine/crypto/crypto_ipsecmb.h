/* dataplane/engine/crypto/crypto_ipsecmb.h: what the ipsec-mb backend (crypto_ipsecmb.c) lends the other backends:
 * its per-thread direct-API manager and one GCM/GMAC operation, so that crypto_native.c can hand
 * long packets to ipsec-mb's GCM on CPUs where that is faster without a second set of managers. */
#ifndef XIPSEC_CRYPTO_IPSECMB_H
#define XIPSEC_CRYPTO_IPSECMB_H

#ifdef HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>

#include "dataplane/engine/crypto/esp_crypto.h"

/* This thread's direct-API manager (created on first use, freed at thread exit), or NULL. Keys for
 * it (IMB_AES*_GCM_PRE) must be set up with a manager of the same type: this one. */
IMB_MGR *esp_imb_direct_mgr(void);

/* One AES-GCM (or, gmac: GMAC over c->auth) operation of c in place with key k of key_len bytes:
 * encrypt writes the tag to c->tag, decrypt the computed one to c->calc (the caller compares).
 * g is scratch holding key-derived state: the caller wipes it when done. */
void esp_imb_gcm_op(IMB_MGR *m, const struct gcm_key_data *k, unsigned key_len, struct esp_cop *c,
		    bool gmac, bool enc, struct gcm_context_data *g);
#endif

#endif
