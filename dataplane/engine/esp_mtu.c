/* dataplane/engine/esp_mtu.c: how large an inner packet fits in one outer packet of an SA (the ESP or AH
 * overhead, padding alignment, tunnel or transport headers): what the outbound stages (esp_out.c, ah.c)
 * report as a packet's MTU and esp_sa_inner_mtu gives the dataplane. */
#include "config.h"

#include <sys/socket.h>

#include "dataplane/engine/esp_internal.h"

uint32_t esp_inner_mtu_hdr(const struct esp_sa *sa, uint32_t outer_mtu, uint8_t inner_family,
			   uint32_t prefix)
{
	uint32_t fixed; /* bytes added that are not padded: outer header (tunnel), headers kept in
	                 * front (transport), UDP, ESP header, IV, ICV */
	uint8_t ofam = sa->mode == SADB_MODE_TUNNEL ? sa->dst.family : inner_family;
	if (sa->mode == SADB_MODE_TUNNEL)
		fixed = ofam == AF_INET6 ? 40 : 20;
	else
		fixed = prefix;
	if (sa->proto == SADB_PROTO_AH) {
		fixed += ofam == AF_INET6 ? sa->ah_hdr_len6 : sa->ah_hdr_len;
		if (sa->mode == SADB_MODE_TRANSPORT)
			fixed -= prefix; /* the headers are part of the packet given */
		return outer_mtu > fixed ? outer_mtu - fixed : 0;
	}
	fixed += (sa->encap_dport ? 8u : 0u) + 8u + sa->iv_len + sa->icv_len;
	if (outer_mtu < fixed + sa->align)
		return 0;
	/* The padded part (payload + 2) must fit in what is left, rounded down to the alignment. */
	uint32_t room = (outer_mtu - fixed) & ~(uint32_t)(sa->align - 1);
	uint32_t kept = sa->mode == SADB_MODE_TRANSPORT ? prefix : 0;
	return kept + room - 2;
}

uint32_t esp_sa_inner_mtu(const struct esp_sa *sa, uint32_t outer_mtu, uint8_t inner_family)
{
	/* Transport mode: a packet without options or extension headers. */
	return esp_inner_mtu_hdr(sa, outer_mtu, inner_family, inner_family == AF_INET6 ? 40 : 20);
}
