/* ike/cluster_mid.c: the peer's message IDs on a cluster node after a split brain. While the sync link
 * was down both nodes were active, and the peer's requests (its DPDs, its rekeys) went to whichever
 * node its packets reached; the ha plugin could not copy the message IDs of those the other node
 * answered. When the nodes meet again the winner expects an ID the peer has long passed, and
 * charon ignores every later request ("received message ID N, expected M, ignored") until the peer
 * gives up its retransmissions and tears the tunnel down (163 s with strongSwan's defaults,
 * doc/architecture.md).
 *
 * A peer never skips a message ID, so an authentic request above the expected one means exactly
 * that: the IDs between were answered by the other node. This listener sees each request before
 * charon checks its ID (bus message hook, not yet decrypted); for one ahead by at most MID_AHEAD,
 * on an ESTABLISHED IKEv2 SA with no exchange of ours in flight, it decrypts and verifies a copy
 * with the IKE_SA's keys and, if it is authentic, sets the expected ID to the request's (the call
 * the ha plugin makes for every ID it copies: set_message_id), so charon then answers it. A request that fails
 * the check changes nothing: an injected header cannot move the ID. With an exchange of ours in
 * flight the reset would restart it: the peer's retransmission comes back once ours completed. */
#include "ike/swan.h"

#include <daemon.h>
#include <encoding/message.h>

#include "ike/cluster_mid.h"

/* far more than a split's DPDs and rekeys; more would be a peer that is not counting from ours */
#define MID_AHEAD 4096u

typedef struct private_cluster_mid_t private_cluster_mid_t;
struct private_cluster_mid_t {
	cluster_mid_t public;
};

/* An exchange this node started is waiting for its response. */
static bool busy(ike_sa_t *ike_sa)
{
	enumerator_t *e = ike_sa->create_task_enumerator(ike_sa, TASK_QUEUE_ACTIVE);
	task_t *task;
	bool any = e->enumerate(e, &task);

	e->destroy(e);
	return any;
}

/* The request decrypts and verifies under the IKE_SA's keys (a copy: the original goes on to charon). */
static bool authentic(ike_sa_t *ike_sa, message_t *msg)
{
	message_t *copy = message_create_from_packet(msg->get_packet(msg));
	bool ok = copy->parse_header(copy) == SUCCESS &&
		  copy->parse_body(copy, ike_sa->get_keymat(ike_sa)) == SUCCESS;

	copy->destroy(copy);
	return ok;
}

METHOD(listener_t, message, bool, private_cluster_mid_t *this, ike_sa_t *ike_sa, message_t *msg,
       bool incoming, bool plain)
{
	uint32_t mid, want;

	if (!incoming || plain || !ike_sa || !msg->get_request(msg) || ike_sa->get_version(ike_sa) != IKEV2 ||
	    ike_sa->get_state(ike_sa) != IKE_ESTABLISHED)
		return TRUE;
	mid = msg->get_message_id(msg);
	want = ike_sa->get_message_id(ike_sa, FALSE);
	if (mid <= want || mid - want > MID_AHEAD)
		return TRUE;
	if (busy(ike_sa) || !authentic(ike_sa, msg))
		return TRUE;
	DBG1(DBG_IKE, "xipsec: the peer's request %u is authentic while %u was expected: the other cluster "
	     "node answered those between (the nodes were apart); expecting %u from now on", mid, want, mid);
	ike_sa->set_message_id(ike_sa, FALSE, mid);
	return TRUE;
}

METHOD(cluster_mid_t, destroy, void, private_cluster_mid_t *this)
{
	free(this);
}

cluster_mid_t *cluster_mid_create(void)
{
	private_cluster_mid_t *this;

	INIT(this,
		.public = {
			.listener = {
				.message = _message,
			},
			.destroy = _destroy,
		},
	);
	return &this->public;
}
