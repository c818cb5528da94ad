/* dataplane/xipsecd/dp_cluster_sas.c: whether a standby holds the SAs the active holds. The ha plugin
 * installs the active node's CHILD_SAs into the standby's SADB, and its resync once brought a
 * restarted node the IKE_SAs without their CHILD_SAs: such a node must not be promoted while the
 * active can still serve. Each heartbeat carries the sender's covered SAs as a count and the sum
 * of a 64-bit hash of each one's cross-node key (struct dpc_sa_key: SPI, protocol, destination and
 * the fingerprint of its keys, so a set with other keys differs too), a few bytes whatever the
 * number of SAs. A set differs for a moment on every rekey (the new CHILD_SA on its way through
 * the plugin, an inbound SA lingering on one node for a second): the standby is not eligible only
 * once its set has differed from the active's for DPC_SADB_GRACE_NS, and again as soon as they
 * match. Two different sets sum alike with a chance of about 2^-64. */
#include "config.h"

#include "dataplane/xipsecd/dp_cluster.h"

uint64_t dpc_key_term(const struct dpc_sa_key *k)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a, 64 bits */
	const uint8_t *p = (const uint8_t *)k;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

bool dpc_sas_differ(const struct dpc_sas *s, uint64_t now)
{
	return s->differ_ns && now - s->differ_ns >= DPC_SADB_GRACE_NS;
}

enum dpc_sas_event dpc_sas_compare(struct dpc_sas *s, uint64_t n, uint64_t sum, bool reference, uint64_t now)
{
	bool same = n == s->peer_n && sum == s->peer_sum;
	enum dpc_sas_event e = DPC_SAS_NONE;

	s->n = n;
	s->sum = sum;
	if (!reference || same) {
		if (s->warned && same)
			e = DPC_SAS_MATCH;
		s->differ_ns = 0;
		s->warned = false;
	} else if (!s->differ_ns) {
		s->differ_ns = now;
	} else if (!s->warned && dpc_sas_differ(s, now)) {
		s->warned = true;
		e = DPC_SAS_DIFFER;
	}
	return e;
}
