/* tests/unit/test_ike_maxqm.c: unit tests of xipsec-iked's status file (ike/maxqm.c), which
 * `ipsecctl ike` and scripts read: after a burst of CHILD SA events from several threads the file
 * shows every one of them within a few rewrite intervals (the writer thread writes the last change
 * even when no further event comes), and an event after a quiet moment is in the file before the
 * listener returns. The listener is driven directly with IKE SA objects of libcharon (charon is not
 * running). */
#include "ike/swan.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <library.h>
#include <daemon.h>
#include <sa/ike_sa.h>

#include "ike/maxqm.h"

/* A counter of the status file in dir, -1 if the file or the key is missing. */
static long status_value(const char *dir, const char *key)
{
	char path[256], line[512], k[64];
	long v, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/status", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", k, &v) == 2 && strcmp(k, key) == 0)
			found = v;
	fclose(f);
	return found;
}

struct burst {
	maxqm_t *m;
	ike_sa_t *ike;
	unsigned n;
};

static void *burst_thread(void *arg)
{
	struct burst *b = arg;
	unsigned i;

	for (i = 0; i < b->n; i++)
		b->m->listener.child_updown(&b->m->listener, b->ike, NULL, TRUE);
	return NULL;
}

#define THREADS 4
#define PER_THREAD 500

static void test_status_burst(void **state)
{
	char dir[] = "/tmp/test_ike_maxqm.XXXXXX";
	ike_sa_t *ike[THREADS];
	ike_sa_id_t *id;
	struct burst b[THREADS];
	pthread_t th[THREADS];
	maxqm_t *m;
	long v = -1;
	int i;

	assert_non_null(mkdtemp(dir));
	m = maxqm_create(dir);
	m->write_status(m);
	assert_int_equal(status_value(dir, "child_sa_established"), 0);
	for (i = 0; i < THREADS; i++) {
		id = ike_sa_id_create(IKEV2_MAJOR_VERSION, 0x1000 + i, 0, FALSE);
		ike[i] = ike_sa_create(id, FALSE, IKEV2);   /* takes a copy of id */
		id->destroy(id);
		assert_non_null(ike[i]);
		b[i] = (struct burst){ .m = m, .ike = ike[i], .n = PER_THREAD };
		assert_int_equal(pthread_create(&th[i], NULL, burst_thread, &b[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	/* nothing happens after the burst: the last rewrite must come by itself */
	for (i = 0; i < 100 && v != THREADS * PER_THREAD; i++) {
		usleep(10000);
		v = status_value(dir, "child_sa_established");
	}
	assert_int_equal(v, THREADS * PER_THREAD);
	/* quiet for a while: the next event is in the file when the listener returns */
	usleep(50000);
	m->listener.child_updown(&m->listener, ike[0], NULL, TRUE);
	assert_int_equal(status_value(dir, "child_sa_established"), THREADS * PER_THREAD + 1);
	for (i = 0; i < THREADS; i++)
		ike[i]->destroy(ike[i]);
	m->destroy(m);
	assert_int_equal(status_value(dir, "child_sa_established"), -1);   /* removed at exit */
	assert_int_equal(rmdir(dir), 0);
}

static int setup(void **state)
{
	char conf[] = "/tmp/test_ike_maxqm.conf.XXXXXX";
	int fd = mkstemp(conf);

	/* libstrongswan wants a readable strongswan.conf: an empty one, never the system's */
	if (fd < 0 || write(fd, "\n", 1) != 1)
		return -1;
	close(fd);
	if (!library_init(conf, "test-ike")) {
		unlink(conf);
		return -1;
	}
	unlink(conf);
	if (!libcharon_init())
		return -1;
	return 0;
}

static int teardown(void **state)
{
	libcharon_deinit();
	library_deinit();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_burst),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
