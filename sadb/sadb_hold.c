/* sadb/sadb_hold.c: when a freed slot may be used again. Free slots wait in FIFO rings, so a freed
 * slot is reused as late as possible; an SA slot also waits until the dataplane has let go of every
 * engine object made from its last SA (sadb_dp_attach and sadb_dp_release; sadb.h explains the
 * scheme), because such an object keeps pointing at the slot's runtime area
 * (doc/architecture.md rule 7). Whether the holder is
 * still alive is judged from /proc: a dead holder's objects went with it. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sadb/sadb_int.h"

#define PF_EXITING_FLAG 0x4u /* the kernel's PF_EXITING: the task never runs user code again */

/* Read a /proc/.../stat file: whether the task can still run user code (not a zombie, not exiting:
 * such a task never touches the SADB again) and its start time in clock ticks after boot. False if
 * the file cannot be read or parsed. */
static bool stat_read(const char *path, bool *live, uint64_t *start)
{
	char buf[1024], *p, *end;
	unsigned long long flags = 0, v = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* pid (comm) state ppid ...: flags is field 9, starttime 22; comm may hold spaces or ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return false;
	*live = p[2] != 'Z' && p[2] != 'X';
	p += 3;
	for (int field = 4; field <= 22; field++, p = end) {
		v = strtoull(p, &end, 10);
		if (end == p)
			return false;
		if (field == 9)
			flags = v;
	}
	*live = *live && !(flags & PF_EXITING_FLAG);
	*start = v ? v : 1;
	return true;
}

/* Start time of a process that may still run user code, 0 if there is none (gone, a zombie, or every
 * thread exiting: kill -9 of a dataplane with a large mapping takes a while to finish, and none of
 * its threads executes another instruction of ours meanwhile). The leader may be exiting while other
 * threads still run, so each thread is looked at. */
static uint64_t proc_start(uint64_t pid)
{
	char path[96];
	uint64_t start, t;
	bool live, tlive = false;
	struct dirent *de;
	DIR *d;

	if (!pid || pid > INT32_MAX)
		return 0;
	snprintf(path, sizeof(path), "/proc/%llu/stat", (unsigned long long)pid);
	if (!stat_read(path, &live, &start))
		return 0;
	if (live)
		return start;
	snprintf(path, sizeof(path), "/proc/%llu/task", (unsigned long long)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!tlive && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%llu/task/%.20s/stat", (unsigned long long)pid, de->d_name);
		if (!stat_read(path, &tlive, &t))
			tlive = false;
	}
	closedir(d);
	return tlive ? start : 0;
}

/* The dataplane's claim on the segment: an open-file-description write lock on its first byte.
 * xipsec-iked holds a flock(2) on the whole file (one IKE daemon per SADB); on Linux the two kinds
 * of lock never conflict, so each daemon's claim stays its own. Either lock goes with the last
 * descriptor of the open file, however the process ends. */
static int dp_claim(int fd, short type)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	return fcntl(fd, F_OFD_SETLK, &l);
}

/* The generation up to which freed slots may be reused, UINT64_MAX when no dataplane holds any. */
uint64_t sadb_dp_applied(const struct sadb *db)
{
	struct sadb_dp_stats *d = sadb_dp_stats(db);
	uint64_t pid, start;

	/* Pairs with the fence in sadb_dp_attach: either the attaching dataplane's pid is seen here,
	 * or it reads the SADB after this writer's earlier changes (Dekker). */
	atomic_thread_fence(memory_order_seq_cst);
	pid = __atomic_load_n(&d->hold_pid, __ATOMIC_SEQ_CST);
	if (!pid)
		return UINT64_MAX;
	start = __atomic_load_n(&d->hold_start, __ATOMIC_ACQUIRE);
	if (proc_start(pid) != start)
		return UINT64_MAX; /* the holder died: its objects went with it */
	return __atomic_load_n(&d->released_gen, __ATOMIC_ACQUIRE);
}

int sadb_dp_attach(struct sadb *db)
{
	struct sadb_dp_stats *d;
	uint64_t me = (uint64_t)getpid(), start = proc_start(me), pid;

	if (!db)
		return -EINVAL;
	if (!(db->flags & (SADB_RDWR | SADB_RUNTIME))) {
		sadb__set_err(db, "sadb_dp_attach needs a SADB_RUNTIME or SADB_RDWR handle");
		return -EPERM;
	}
	if (!start) {
		sadb__set_err(db, "cannot read this process's start time from /proc");
		return -EIO;
	}
	d = sadb_dp_stats(db);
	/* The hold is claimed with the kernel's lock (dp_claim), which one process at a time gets and
	 * which goes when it exits however it exits. Reading hold_pid and hold_start, judging them and
	 * writing them would let two dataplanes starting at once both find the place free, and the
	 * loser's (pid, start) could be left naming a process that is gone while the winner runs, so
	 * that writers reuse slots it still holds. A predecessor that was just killed may take a
	 * moment to go (its files close after its memory is torn down): it is waited for, a little,
	 * as is a live holder that is stopping. */
	for (int tries = 0;; tries++) {
		pid = __atomic_load_n(&d->hold_pid, __ATOMIC_ACQUIRE);
		bool live = pid && pid != me &&
			    proc_start(pid) == __atomic_load_n(&d->hold_start, __ATOMIC_ACQUIRE);
		if (!live) {
			if (dp_claim(db->fd, F_WRLCK) == 0)
				break;
			int e = errno;
			if (e != EAGAIN && e != EACCES && e != EINTR) {
				sadb__set_err(db, "cannot lock %s for the dataplane: %s", db->path, strerror(e));
				return -e;
			}
		}
		if (tries == 200) { /* 10 s, as xipsecd waits for its TUN device (DP_BUSY_WAIT_MS) */
			if (live)
				sadb__set_err(db, "%s is in use by another dataplane (pid %llu)", db->path,
					      (unsigned long long)pid);
			else
				sadb__set_err(db, "%s is in use by another dataplane (starting or stopping)",
					      db->path);
			return -EBUSY;
		}
		usleep(50000);
	}
	sadb__test_stop(db, SADB_STOP_ATTACH);
	/* Nothing is released until this process says so; then it becomes the holder. */
	__atomic_store_n(&d->released_gen, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->hold_start, start, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->hold_pid, me, __ATOMIC_SEQ_CST);
	atomic_thread_fence(memory_order_seq_cst);
	sadb__clear_err(db);
	return 0;
}

void sadb_dp_release(struct sadb *db, uint64_t gen)
{
	struct sadb_dp_stats *d = db ? sadb_dp_stats(db) : NULL;

	if (d && __atomic_load_n(&d->released_gen, __ATOMIC_RELAXED) < gen)
		__atomic_store_n(&d->released_gen, gen, __ATOMIC_RELEASE);
}

void sadb_dp_detach(struct sadb *db)
{
	struct sadb_dp_stats *d = db ? sadb_dp_stats(db) : NULL;

	if (d && __atomic_load_n(&d->hold_pid, __ATOMIC_RELAXED) == (uint64_t)getpid()) {
		__atomic_store_n(&d->hold_pid, 0, __ATOMIC_RELEASE);
		(void)dp_claim(db->fd, F_UNLCK);
	}
}

uint32_t sadb_sa_quarantined(const struct sadb *db)
{
	uint64_t rel, head, tail;
	uint32_t n = 0;

	if (!db)
		return 0;
	rel = sadb_dp_applied(db);
	head = db->h->sa_free_head;
	tail = db->h->sa_free_tail;
	for (uint64_t k = head; k < tail; k++) {
		uint32_t s = db->sa_free[k % db->h->max_sa];
		if (s < db->h->max_sa && db->sa_meta[s].freed_gen > rel)
			n++;
	}
	return n;
}

/* ---- free slot rings (FIFO: a freed slot is reused as late as possible) ---- */

int sadb__slot_alloc(struct sadb *db, bool pol)
{
	struct sadb_hdr *h = db->h;
	uint64_t *head = pol ? &h->pol_free_head : &h->sa_free_head;
	uint64_t tail = pol ? h->pol_free_tail : h->sa_free_tail;
	uint32_t *ring = pol ? db->pol_free : db->sa_free;
	_Atomic uint32_t *hwm = pol ? &h->pol_hwm : &h->sa_hwm;
	uint32_t cap = pol ? h->max_policy : h->max_sa;
	uint32_t hw;

	/* An SA slot is taken from the ring only once the dataplane has let go of its last SA; the
	 * ring is in freeing order, so if its head is still held, a never-used slot is taken. */
	if (*head < tail &&
	    (pol || db->sa_meta[ring[*head % cap] % cap].freed_gen <= sadb_dp_applied(db))) {
		uint32_t s = ring[*head % cap];
		(*head)++;
		return (int)s;
	}
	hw = atomic_load_explicit(hwm, memory_order_relaxed);
	if (hw < cap) {
		atomic_store_explicit(hwm, hw + 1, memory_order_release);
		return (int)hw;
	}
	return *head < tail ? -EBUSY : -ENOSPC;
}

void sadb__slot_release(struct sadb *db, bool pol, uint32_t s)
{
	struct sadb_hdr *h = db->h;
	uint64_t *tail = pol ? &h->pol_free_tail : &h->sa_free_tail;
	uint32_t *ring = pol ? db->pol_free : db->sa_free;
	uint32_t cap = pol ? h->max_policy : h->max_sa;

	ring[*tail % cap] = s;
	(*tail)++;
}

/* After a crash: the rings from the committed state of every slot below the high-water mark. */
void sadb__rebuild_free(struct sadb *db, bool pol)
{
	struct sadb_hdr *h = db->h;
	uint32_t hw = atomic_load_explicit(pol ? &h->pol_hwm : &h->sa_hwm, memory_order_relaxed);

	if (pol)
		h->pol_free_head = h->pol_free_tail = 0;
	else
		h->sa_free_head = h->sa_free_tail = 0;
	for (uint32_t i = 0; i < hw; i++)
		if (!(pol ? db->pol_meta[i].used : db->sa_meta[i].used))
			sadb__slot_release(db, pol, i);
}
