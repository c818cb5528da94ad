/* ike/cluster_seg.c: the ha plugin's segment ownership, to xipsecd. The plugin keeps the segments it owns
 * to itself; the one place every change shows, whatever moved it (its configuration at start, the
 * other node's heartbeat lost, autobalance, `+N`/`-N` on its FIFO, a peer node's take or drop), is
 * the line it logs under its lock after each change: "HA segment N [de]activated, now active: LIST"
 * (group cfg, level 1), with the whole owned list, so a line lost or seen twice costs nothing.
 * This logger takes LIST from it and a job sends it to xipsecd; the logger itself never blocks (it
 * runs inside the plugin's lock and the bus's). The last list is sent again every RESEND_MS, so an
 * xipsecd that restarts (owning nothing, dp_segment.c) learns it again within that time. Every job
 * holds a reference: charon may run or discard a queued job after destroy().
 * The line's wording is the plugin's (ha_segments.c, log_segments, strongSwan 5.9.8); tests/netns/
 * test_ha_active.sh fails if a strongSwan release changes it. */
#include "ike/swan.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <daemon.h>
#include <processing/jobs/callback_job.h>
#include <threading/mutex.h>

#include "ike/cluster_seg.h"

#define RESEND_MS 1000
#define MARK ", now active: "

typedef struct private_cluster_seg_t private_cluster_seg_t;
struct private_cluster_seg_t {
	cluster_seg_t public;
	char *ctl_path;
	mutex_t *mutex;                 /* latest, known */
	char latest[64];                /* the plugin's last list: "1,2" or "none" */
	bool known;
	mutex_t *send_mutex;            /* one sender at a time, so the last list sent is the latest */
	bool failing;                   /* the last send failed (logged once) */
	bool gone;                      /* destroyed: jobs still queued do nothing (under mutex) */
	refcount_t ref;                 /* the owner's and one per job */
};

static void release(private_cluster_seg_t *this)
{
	if (!ref_put(&this->ref))
		return;
	this->mutex->destroy(this->mutex);
	this->send_mutex->destroy(this->send_mutex);
	free(this->ctl_path);
	free(this);
}

static job_t *job(private_cluster_seg_t *this, callback_job_cb_t cb)
{
	ref_get(&this->ref);
	return (job_t *)callback_job_create(cb, this, (callback_job_cleanup_t)release, NULL);
}

/* "segments set LIST" to xipsecd; 0 when it accepted it. */
static int send_list(private_cluster_seg_t *this, const char *list)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd pf = { .events = POLLIN };
	char req[96], ans[128] = "";
	int len = snprintf(req, sizeof(req), "segments set %s\n", list);
	ssize_t n = -1;

	if (strlen(this->ctl_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, this->ctl_path);
	pf.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (pf.fd < 0)
		return -errno;
	if (connect(pf.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(pf.fd, req, len) == len && poll(&pf, 1, 2000) == 1)
		n = read(pf.fd, ans, sizeof(ans) - 1);
	close(pf.fd);
	if (n <= 0)
		return -EIO;
	return strncmp(ans, "error", 5) ? 0 : -EINVAL;
}

static job_requeue_t push(private_cluster_seg_t *this)
{
	char list[sizeof(this->latest)];
	bool known, gone;
	int err;

	this->send_mutex->lock(this->send_mutex);
	this->mutex->lock(this->mutex);
	known = this->known;
	gone = this->gone;
	memcpy(list, this->latest, sizeof(list));
	this->mutex->unlock(this->mutex);
	if (known && !gone) {
		err = send_list(this, list);
		if (err && !this->failing)
			DBG1(DBG_CFG, "xipsec: cannot give segments %s to xipsecd at %s: %s", list,
			     this->ctl_path, strerror(-err));
		else if (!err && this->failing)
			DBG1(DBG_CFG, "xipsec: xipsecd at %s owns segments %s", this->ctl_path, list);
		this->failing = err != 0;
	}
	this->send_mutex->unlock(this->send_mutex);
	return JOB_REQUEUE_NONE;
}

static job_requeue_t resend(private_cluster_seg_t *this)
{
	bool gone;

	push(this);
	this->mutex->lock(this->mutex);
	gone = this->gone;
	this->mutex->unlock(this->mutex);
	return gone ? JOB_REQUEUE_NONE : JOB_RESCHEDULE_MS(RESEND_MS);
}

METHOD(logger_t, log_, void, private_cluster_seg_t *this, debug_t group, level_t level, int thread,
       ike_sa_t *ike_sa, const char *message)
{
	const char *list;
	size_t n;

	if (group != DBG_CFG || strncmp(message, "HA segment ", 11) || !(list = strstr(message, MARK)))
		return;
	list += strlen(MARK);
	n = strcspn(list, " \n");
	if (!n || n >= sizeof(this->latest))
		return;
	this->mutex->lock(this->mutex);
	memcpy(this->latest, list, n);
	this->latest[n] = 0;
	this->known = TRUE;
	this->mutex->unlock(this->mutex);
	lib->processor->queue_job(lib->processor, job(this, (callback_job_cb_t)push));
}

METHOD(logger_t, get_level, level_t, private_cluster_seg_t *this, debug_t group)
{
	return group == DBG_CFG ? LEVEL_CTRL : LEVEL_SILENT;   /* DBG1 */
}

METHOD(cluster_seg_t, destroy, void, private_cluster_seg_t *this)
{
	charon->bus->remove_logger(charon->bus, &this->public.logger);
	this->mutex->lock(this->mutex);
	this->gone = TRUE;
	this->mutex->unlock(this->mutex);
	release(this);
}

cluster_seg_t *cluster_seg_create(const char *ctl_path)
{
	private_cluster_seg_t *this;

	INIT(this,
		.public = {
			.logger = {
				.log = _log_,
				.get_level = _get_level,
			},
			.destroy = _destroy,
		},
		.ctl_path = strdup(ctl_path),
		.mutex = mutex_create(MUTEX_TYPE_DEFAULT),
		.send_mutex = mutex_create(MUTEX_TYPE_DEFAULT),
		.ref = 1,
	);
	charon->bus->add_logger(charon->bus, &this->public.logger);
	lib->scheduler->schedule_job_ms(lib->scheduler, job(this, (callback_job_cb_t)resend), RESEND_MS);
	return &this->public;
}
