/* dataplane/engine/esp_seq.h: an outbound SA object's sequence numbers: taking one per packet (inline),
 * reserving the next block in the runtime area (esp_seq.c). Internal to the engine. */
#ifndef XIPSEC_ESP_SEQ_H
#define XIPSEC_ESP_SEQ_H

#include "dataplane/engine/esp_sa.h"

/* Reserve the next block of outbound numbers in the runtime; false when none can be had now:
 * sa->seq_why says why (the space is used up, the runtime area belongs to another SA instance, or
 * the numbers above rt->seq_lease are not yet recorded on disk). */
bool esp_seq_refill(struct esp_sa *sa);
/* Start of an outbound burst of n packets. A shared SA (esp_sa_opts.seq_share > 1) abandons the
 * numbers left from an earlier burst, which another worker has long since overtaken, and reserves
 * for this one no more than it needs. */
static inline void esp_seq_burst(struct esp_sa *sa, unsigned n)
{
	if (sa->seq_shared) {
		sa->seq_limit = sa->seq_next - 1; /* seq_next >= 1: no wrap */
		sa->seq_want = n;
	}
}

/* Take one outbound sequence number; false (drop with sa->seq_why) when none can be had. */
static inline bool esp_seq_take(struct esp_sa *sa, uint64_t *seq)
{
	if (ESP_UNLIKELY(sa->seq_next > sa->seq_limit || sa->seq_done) && !esp_seq_refill(sa))
		return false;
	*seq = sa->seq_next;
	if (ESP_UNLIKELY(sa->seq_next == sa->seq_max))
		sa->seq_done = true; /* the last number of the space: no wrap to 0 afterwards */
	else
		sa->seq_next++;
	return true;
}

/* esp_seq_take for packet p: false with p->drop set to why no number can be had. */
static inline bool esp_seq_take_pkt(struct esp_sa *sa, struct esp_pkt *p, uint64_t *seq)
{
	if (esp_seq_take(sa, seq))
		return true;
	p->drop = (enum sadb_drop)sa->seq_why;
	return false;
}

#endif
