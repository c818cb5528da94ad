/* ike/maxqm.c: maxqm for xipsec-iked. HP-UX IPSec's maxqm bounds how many Quick Mode (CHILD) SAs one
 * ISAKMP SA may key: after maxqm of them, the next negotiation runs on a fresh Main Mode. strongSwan
 * has no such limit, so this bus listener counts CHILD_SAs negotiated on each IKE_SA (new ones and
 * rekeyed ones: both are a Quick Mode / CREATE_CHILD_SA exchange) and, when the count reaches the
 * limit, renews the IKE_SA:
 *  - IKEv1: reauthentication, i.e. a new Main (or Aggressive) Mode; charon moves the existing CHILD_SAs
 *    to the new ISAKMP SA without new Quick Modes (rekey_ike_sa_job_create(id, TRUE)).
 *  - IKEv2: by default an IKE_SA rekey (CREATE_CHILD_SA with a fresh key exchange, so new SKEYSEED);
 *    the CHILD_SAs move to it. IKEv2 reauthentication re-creates every CHILD_SA on the new IKE_SA,
 *    which with maxqm or more CHILD_SAs would count past the limit again at once and loop; with
 *    xipsec-iked.maxqm_ikev2 = reauth it is used anyway (then maxqm must exceed the CHILD_SA count).
 * Only the original initiator of an IKE_SA enforces the limit, so that two xipsec-iked never both
 * renew one SA; xipsec-iked.maxqm_responder = yes makes a responder enforce it against peers that do
 * not (then it acts once the count exceeds maxqm).
 *
 * The counters also go to a status file (rewritten atomically) that `ipsecctl ike` shows: at once after
 * an event when the file is idle, and at most every STATUS_MIN_MS while events come faster (a status
 * writer thread writes the latest state then). The file is written outside the listener's lock: a
 * gateway bringing up a thousand CHILD SAs a second would otherwise spend a rewrite (on a disk run
 * directory, a data flush at each rename) per CHILD SA with every other event waiting. `ipsecctl ike
 * maxqm set` writes an override file ("maxqm N", "conn NAME N" lines) next to it and sends SIGHUP; the
 * override wins over strongswan.conf until the daemon stops (it is removed at start and exit). */
#include "ike/swan.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>

#include <daemon.h>
#include <collections/hashtable.h>
#include <threading/condvar.h>
#include <threading/mutex.h>
#include <threading/thread.h>
#include <processing/jobs/rekey_ike_sa_job.h>
#include <processing/jobs/delete_ike_sa_job.h>

#include "ike/maxqm.h"
#include "ike/kernel_sadb.h"

struct qm_entry {
	uint32_t ike_id;
	char conn[64];
	int version;
	unsigned count;         /* CHILD_SAs negotiated on this IKE_SA */
	unsigned limit;
	bool renewing;          /* renewal scheduled */
	ike_sa_id_t *id;        /* to delete an IKEv1 SA once its reauthentication completed */
	bool initiator;
};

typedef struct private_maxqm_t private_maxqm_t;
struct private_maxqm_t {
	maxqm_t public;
	mutex_t *mutex;
	hashtable_t *entries;       /* struct qm_entry by IKE_SA unique id: one lookup per CHILD SA */
	char *status_path, *override_path;
	uint64_t ike_up, ike_up_v1, ike_up_v2, child_up, child_rekeyed, renewals;
	/* the status file, under mutex: changes made (st_gen) and written (st_written) */
	uint64_t st_gen, st_written;
	bool st_busy;               /* a thread is writing the file (without the mutex) */
	bool st_idle;               /* the writer thread waits for work, not for a rewrite's time */
	bool st_stop;
	timeval_t st_last;          /* when the last write began (monotonic) */
	condvar_t *st_cond;         /* wakes the status writer thread */
	thread_t *st_thread;
};

/* The least time between two rewrites of the status file while events keep coming. */
#define STATUS_MIN_MS 10

/* Runtime overrides from `ipsecctl ike maxqm set`. */
#define OV_CONNS 64
static struct {
	long def;                       /* -1: none */
	unsigned n;
	char conn[OV_CONNS][64];
	long value[OV_CONNS];
} ov = { .def = -1 };
static pthread_mutex_t ov_lock = PTHREAD_MUTEX_INITIALIZER;

static void override_load(const char *path)
{
	char line[256], name[64];
	long v;
	FILE *f;

	pthread_mutex_lock(&ov_lock);
	ov.def = -1;
	ov.n = 0;
	f = path ? fopen(path, "r") : NULL;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "maxqm %ld", &v) == 1 && v >= 0)
			ov.def = v;
		else if (sscanf(line, "conn %63s %ld", name, &v) == 2 && v >= 0 && ov.n < OV_CONNS) {
			snprintf(ov.conn[ov.n], sizeof(ov.conn[0]), "%s", name);
			ov.value[ov.n++] = v;
		}
	}
	if (f)
		fclose(f);
	pthread_mutex_unlock(&ov_lock);
}

unsigned maxqm_limit(const char *conn)
{
	int def = lib->settings->get_int(lib->settings, "%s.maxqm", MAXQM_DEFAULT, lib->ns);
	long v;
	unsigned i;

	pthread_mutex_lock(&ov_lock);
	if (ov.def >= 0)
		def = ov.def;
	v = def;
	if (conn && *conn && !strchr(conn, '.'))
		v = lib->settings->get_int(lib->settings, "%s.maxqm_conn.%s", def, lib->ns, conn);
	for (i = 0; conn && i < ov.n; i++)
		if (streq(ov.conn[i], conn))
			v = ov.value[i];
	pthread_mutex_unlock(&ov_lock);
	return v < 0 ? 0 : (unsigned)v;
}

static u_int entry_hash(const void *key)
{
	return chunk_hash(chunk_create((u_char *)key, sizeof(uint32_t)));
}

static bool entry_equals(const void *a, const void *b)
{
	return *(const uint32_t *)a == *(const uint32_t *)b;
}

static struct qm_entry *find(private_maxqm_t *this, uint32_t id, bool remove)
{
	return remove ? this->entries->remove(this->entries, &id) : this->entries->get(this->entries, &id);
}

static struct qm_entry *get(private_maxqm_t *this, ike_sa_t *ike_sa)
{
	struct qm_entry *q = find(this, ike_sa->get_unique_id(ike_sa), FALSE);

	if (!q) {
		INIT(q, .ike_id = ike_sa->get_unique_id(ike_sa),
		     .version = ike_sa->get_version(ike_sa) == IKEV1 ? 1 : 2,
		     .initiator = ike_sa->has_condition(ike_sa, COND_ORIGINAL_INITIATOR));
		snprintf(q->conn, sizeof(q->conn), "%s", ike_sa->get_name(ike_sa));
		q->id = ike_sa->get_id(ike_sa)->clone(ike_sa->get_id(ike_sa));
		this->entries->put(this->entries, &q->ike_id, q);
	}
	q->limit = maxqm_limit(q->conn);
	return q;
}

static void entry_destroy(struct qm_entry *q)
{
	if (q) {
		DESTROY_IF(q->id);
		free(q);
	}
}

/* IKEv1 reauthentication leaves the old ISAKMP SA (now without CHILD_SAs, which moved to the new one on
 * both ends) to live until its lifetime ends; with maxqm the old one has done its job: delete it once
 * its successor is up, so that one Main Mode SA per peer and connection remains. Not at once: the
 * responder moves the CHILD_SAs over in a job of its own after its last Main Mode message, and a
 * DELETE of the old ISAKMP SA that it handles first takes them down with it (seen as CHILD SAs missing
 * from the responder's SADB after back-to-back renewals). */
#define RETIRE_DELAY_MS 2000
static void retire_renewed(private_maxqm_t *this, ike_sa_t *new)
{
	enumerator_t *e = this->entries->create_enumerator(this->entries);
	struct qm_entry *q;

	while (e->enumerate(e, NULL, &q)) {
		if (!q->renewing || q->version != 1 || q->ike_id == new->get_unique_id(new) ||
		    !streq(q->conn, new->get_name(new)))
			continue;
		DBG1(DBG_IKE, "xipsec: deleting ISAKMP SA %s[%u] replaced by [%u] after maxqm", q->conn,
		     q->ike_id, new->get_unique_id(new));
		lib->scheduler->schedule_job_ms(lib->scheduler, (job_t *)delete_ike_sa_job_create(q->id, TRUE),
						RETIRE_DELAY_MS);
		this->entries->remove_at(this->entries, e);
		entry_destroy(q);
	}
	e->destroy(e);
}

/* The status file's text (malloc'd, NULL without memory); mutex held. */
static char *status_text(private_maxqm_t *this, size_t *len)
{
	struct kernel_sadb_stats ks;
	enumerator_t *e;
	struct qm_entry *q;
	char *buf = NULL;
	FILE *f;

	kernel_sadb_get_stats(&ks);
	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	fprintf(f, "# xipsec-iked status: read by `ipsecctl ike`\n");
	fprintf(f, "pid %d\n", (int)getpid());
	fprintf(f, "maxqm %u\n", maxqm_limit(NULL));
	fprintf(f, "ike_sa_established %llu\n", (unsigned long long)this->ike_up);
	fprintf(f, "main_modes %llu\n", (unsigned long long)this->ike_up_v1);
	fprintf(f, "ikev2_ike_sas %llu\n", (unsigned long long)this->ike_up_v2);
	fprintf(f, "child_sa_established %llu\n", (unsigned long long)this->child_up);
	fprintf(f, "child_sa_rekeyed %llu\n", (unsigned long long)this->child_rekeyed);
	fprintf(f, "maxqm_renewals %llu\n", (unsigned long long)this->renewals);
	fprintf(f, "sadb_sa_added %llu\n", (unsigned long long)ks.sa_added);
	fprintf(f, "sadb_sa_deleted %llu\n", (unsigned long long)ks.sa_deleted);
	fprintf(f, "sadb_soft_expired %llu\n", (unsigned long long)ks.soft_expired);
	fprintf(f, "sadb_hard_expired %llu\n", (unsigned long long)ks.hard_expired);
	fprintf(f, "sadb_seq_soft_expired %llu\n", (unsigned long long)ks.seq_soft_expired);
	fprintf(f, "sadb_acquires %llu\n", (unsigned long long)ks.acquires);
	e = this->entries->create_enumerator(this->entries);
	while (e->enumerate(e, NULL, &q))
		fprintf(f, "ike %u %s v%d %s qm %u limit %u%s\n", q->ike_id, q->conn, q->version,
			q->initiator ? "initiator" : "responder", q->count, q->limit,
			q->renewing ? " renewing" : "");
	e->destroy(e);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void status_file_write(const char *path, const char *text, size_t len)
{
	char tmp[4096 + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		DBG1(DBG_CFG, "xipsec: cannot write %s: %s", tmp, strerror(errno));
		return;
	}
	if (fwrite(text, 1, len, f) != len) {
		fclose(f);
		DBG1(DBG_CFG, "xipsec: cannot write %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		DBG1(DBG_CFG, "xipsec: cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
}

/* Write the current state; mutex held and no write under way. The mutex is released during the I/O
 * (st_busy keeps other writers out, so writes never overtake one another); changes made meanwhile
 * are left to the writer thread. */
static void status_write(private_maxqm_t *this)
{
	uint64_t gen = this->st_gen;
	size_t len = 0;
	char *text;

	this->st_busy = TRUE;
	time_monotonic(&this->st_last);
	text = status_text(this, &len);
	this->mutex->unlock(this->mutex);
	if (text)
		status_file_write(this->status_path, text, len);
	free(text);
	this->mutex->lock(this->mutex);
	this->st_busy = FALSE;
	this->st_written = gen;
	if (this->st_gen != gen) {
		if (this->st_thread) {
			if (this->st_idle)
				this->st_cond->signal(this->st_cond);
		} else {
			status_write(this);
		}
	}
}

static unsigned ms_since(const timeval_t *t)
{
	timeval_t now;

	time_monotonic(&now);
	return (now.tv_sec - t->tv_sec) * 1000 + (now.tv_usec - t->tv_usec) / 1000;
}

/* Something the status file shows changed; mutex held (released for a moment if this thread writes). */
static void write_status_locked(private_maxqm_t *this)
{
	if (!this->status_path)
		return;
	this->st_gen++;
	if (!this->st_busy && (!this->st_thread || ms_since(&this->st_last) >= STATUS_MIN_MS))
		status_write(this);
	else if (this->st_idle)
		this->st_cond->signal(this->st_cond);   /* else it wakes for the rewrite it waits for */
}

/* The status writer thread: the rewrites that were due while events came faster than STATUS_MIN_MS. */
static void *status_thread(private_maxqm_t *this)
{
	sigset_t all;

	/* the daemon's main thread takes its signals with sigwait (iked.c) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	this->mutex->lock(this->mutex);
	while (!this->st_stop) {
		unsigned since = ms_since(&this->st_last);

		if (this->st_gen == this->st_written || this->st_busy) {
			this->st_idle = TRUE;
			this->st_cond->wait(this->st_cond, this->mutex);
			this->st_idle = FALSE;
		} else if (since < STATUS_MIN_MS)
			this->st_cond->timed_wait(this->st_cond, this->mutex, STATUS_MIN_MS - since);
		else
			status_write(this);
	}
	this->mutex->unlock(this->mutex);
	return NULL;
}

/* One more CHILD_SA negotiated on ike_sa: renew the IKE_SA if that reached the limit. */
static void count_child(private_maxqm_t *this, ike_sa_t *ike_sa)
{
	struct qm_entry *q = get(this, ike_sa);
	bool enforce, reauth;
	char *v2mode;

	q->count++;
	if (!q->limit || q->renewing)
		return;
	enforce = q->initiator ? q->count >= q->limit
		: (lib->settings->get_bool(lib->settings, "%s.maxqm_responder", FALSE, lib->ns) &&
		   q->count > q->limit);
	if (!enforce)
		return;
	if (q->version == 1) {
		reauth = TRUE;
	} else {
		v2mode = lib->settings->get_str(lib->settings, "%s.maxqm_ikev2", "rekey", lib->ns);
		reauth = streq(v2mode, "reauth");
	}
	q->renewing = TRUE;
	this->renewals++;
	DBG1(DBG_IKE, "xipsec: maxqm %u reached on IKE_SA %s[%u] (%u CHILD_SAs): %s", q->limit, q->conn,
	     q->ike_id, q->count,
	     q->version == 1 ? "new Main Mode (reauthentication)" :
	     reauth ? "IKEv2 reauthentication" : "IKEv2 IKE_SA rekey");
	lib->processor->queue_job(lib->processor,
		(job_t *)rekey_ike_sa_job_create(ike_sa->get_id(ike_sa), reauth));
}

METHOD(listener_t, ike_updown, bool, private_maxqm_t *this, ike_sa_t *ike_sa, bool up)
{
	this->mutex->lock(this->mutex);
	if (up) {
		get(this, ike_sa);
		if (ike_sa->get_version(ike_sa) == IKEV1 && ike_sa->has_condition(ike_sa, COND_ORIGINAL_INITIATOR))
			retire_renewed(this, ike_sa);
		this->ike_up++;
		if (ike_sa->get_version(ike_sa) == IKEV1)
			this->ike_up_v1++;
		else
			this->ike_up_v2++;
		DBG1(DBG_IKE, "xipsec: %s established IKE_SA %s[%u] (%llu so far)",
		     ike_sa->get_version(ike_sa) == IKEV2 ? "IKE_SA_INIT/IKE_AUTH" :
		     (ike_sa->get_peer_cfg(ike_sa) &&
		      ike_sa->get_peer_cfg(ike_sa)->use_aggressive(ike_sa->get_peer_cfg(ike_sa))) ?
		     "Aggressive Mode" : "Main Mode",
		     ike_sa->get_name(ike_sa), ike_sa->get_unique_id(ike_sa),
		     (unsigned long long)this->ike_up);
	} else {
		entry_destroy(find(this, ike_sa->get_unique_id(ike_sa), TRUE));
	}
	write_status_locked(this);
	this->mutex->unlock(this->mutex);
	return TRUE;
}

METHOD(listener_t, ike_rekey, bool, private_maxqm_t *this, ike_sa_t *old, ike_sa_t *new)
{
	this->mutex->lock(this->mutex);
	entry_destroy(find(this, old->get_unique_id(old), TRUE));
	get(this, new);
	this->ike_up++;
	this->ike_up_v2++;
	write_status_locked(this);
	this->mutex->unlock(this->mutex);
	return TRUE;
}

METHOD(listener_t, child_updown, bool, private_maxqm_t *this, ike_sa_t *ike_sa, child_sa_t *child_sa,
       bool up)
{
	if (!up)
		return TRUE;
	this->mutex->lock(this->mutex);
	this->child_up++;
	count_child(this, ike_sa);
	write_status_locked(this);
	this->mutex->unlock(this->mutex);
	return TRUE;
}

METHOD(listener_t, child_rekey, bool, private_maxqm_t *this, ike_sa_t *ike_sa, child_sa_t *old,
       child_sa_t *new)
{
	this->mutex->lock(this->mutex);
	this->child_rekeyed++;
	count_child(this, ike_sa);
	write_status_locked(this);
	this->mutex->unlock(this->mutex);
	return TRUE;
}

/* The IKE_SA that renews (reauthenticates or re-establishes) another sends its first message before
 * charon registers it: strongSwan 5.9 (doc/platform.md) makes it with create_new(), which does not
 * enter it in the IKE_SA manager, and checks it in only once that message is out. A reply that comes
 * back sooner finds no IKE_SA, is dropped ("IKE_SA checkout not successful") and costs a retransmission
 * timeout (4 s): under maxqm, in several percent of the IKEv1 renewals. Entering it now, as checked out
 * by this thread (the one that initiates and then checks it in), makes such a reply wait for the
 * check-in instead. Two places make such an IKE_SA: IKEv1 reauthentication (the task manager's
 * queue_ike_reauth, which moves the CHILD_SAs over first: the second children_migrate event, with no
 * id, comes for the new IKE_SA) and re-establishment (ike_reestablish_pre). The other
 * children_migrate events (adopting CHILD_SAs at check-in) come for registered, established IKE_SAs;
 * only a fresh one (IKE_CREATED) is entered. */
static void register_new(ike_sa_t *new)
{
	if (new && new->get_state(new) == IKE_CREATED)
		charon->ike_sa_manager->checkout_new(charon->ike_sa_manager, new);
}

METHOD(listener_t, children_migrate, bool, private_maxqm_t *this, ike_sa_t *ike_sa, ike_sa_id_t *new,
       uint32_t unique)
{
	(void)this;
	(void)unique;
	if (!new)
		register_new(ike_sa);
	return TRUE;
}

METHOD(listener_t, ike_reestablish_pre, bool, private_maxqm_t *this, ike_sa_t *old, ike_sa_t *new)
{
	(void)this;
	(void)old;
	register_new(new);
	return TRUE;
}

METHOD(maxqm_t, write_status, void, private_maxqm_t *this)
{
	struct qm_entry *q;
	enumerator_t *e;

	override_load(this->override_path);
	this->mutex->lock(this->mutex);
	e = this->entries->create_enumerator(this->entries);
	while (e->enumerate(e, NULL, &q))
		q->limit = maxqm_limit(q->conn);
	e->destroy(e);
	write_status_locked(this);
	this->mutex->unlock(this->mutex);
}

METHOD(maxqm_t, destroy, void, private_maxqm_t *this)
{
	if (this->st_thread) {
		this->mutex->lock(this->mutex);
		this->st_stop = TRUE;
		this->st_cond->signal(this->st_cond);
		this->mutex->unlock(this->mutex);
		this->st_thread->join(this->st_thread);
	}
	this->st_cond->destroy(this->st_cond);
	if (this->status_path)
		unlink(this->status_path);
	if (this->override_path)
		unlink(this->override_path);
	this->entries->destroy_function(this->entries, (void *)entry_destroy);
	this->mutex->destroy(this->mutex);
	free(this->status_path);
	free(this->override_path);
	free(this);
}

maxqm_t *maxqm_create(const char *run_dir)
{
	private_maxqm_t *this;
	char *status_path = NULL, *override_path = NULL;

	if (run_dir && (asprintf(&status_path, "%s/status", run_dir) < 0 ||
			asprintf(&override_path, "%s/maxqm", run_dir) < 0))
		status_path = override_path = NULL;

	INIT(this,
		.public = {
			.listener = {
				.ike_updown = _ike_updown,
				.ike_rekey = _ike_rekey,
				.child_updown = _child_updown,
				.child_rekey = _child_rekey,
				.ike_reestablish_pre = _ike_reestablish_pre,
				.children_migrate = _children_migrate,
			},
			.write_status = _write_status,
			.destroy = _destroy,
		},
		.mutex = mutex_create(MUTEX_TYPE_DEFAULT),
		.st_cond = condvar_create(CONDVAR_TYPE_DEFAULT),
		.entries = hashtable_create(entry_hash, entry_equals, 64),
		.status_path = status_path,
		.override_path = override_path,
	);
	if (status_path) {
		this->st_thread = thread_create((thread_main_t)status_thread, this);
		if (!this->st_thread)
			DBG1(DBG_CFG, "xipsec: no status writer thread: %s is rewritten after every event",
			     status_path);
	}
	if (override_path)
		unlink(override_path);
	return &this->public;
}
