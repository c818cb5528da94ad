/* metrics/metrics_snapshot.c: a snapshot's samples: adding one to a family (the SADB part in
 * metrics.c and the xipsec-iked part in metrics_ike.c both fill the snapshot through xm_add()),
 * a row set's rows and their label values (set again when a later source names them), the label
 * names and values an exporter reads back, and freeing it all. The bottom of
 * libxmetrics.a: it calls neither part. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_int.h"

/* Room for need more bytes of label text: 0 or -ENOMEM. */
static int text_room(struct xm_rowset *r, size_t need)
{
	size_t cap = r->text_cap ? r->text_cap : 1024;
	char *t;

	if (r->text_len + need <= r->text_cap)
		return 0;
	while (cap < r->text_len + need)
		cap *= 2;
	if (!(t = realloc(r->text, cap)))
		return -ENOMEM;
	r->text = t;
	r->text_cap = cap;
	return 0;
}

long xm_rows_add(struct xm_rowset *r, const char *const *vals)
{
	size_t need = 0;

	for (unsigned i = 0; i < r->n_labels; i++)
		need += strlen(vals[i]) + 1;
	if (text_room(r, need))
		return -ENOMEM;
	if ((r->n_rows + 1) * r->n_labels > r->off_cap) {
		size_t cap = r->off_cap ? r->off_cap * 2 : 64 * (size_t)r->n_labels;
		size_t *o = realloc(r->off, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		r->off = o;
		r->off_cap = cap;
	}
	for (unsigned i = 0; i < r->n_labels; i++) {
		size_t l = strlen(vals[i]) + 1;

		r->off[r->n_rows * r->n_labels + i] = r->text_len;
		memcpy(r->text + r->text_len, vals[i], l);
		r->text_len += l;
	}
	return (long)r->n_rows++;
}

/* The old value stays in the text, unreferenced, until the snapshot is freed: a label is set once
 * per row (the SA rows' names after the VICI answer), so the waste is bounded by the names' size. */
int xm_rows_set(struct xm_rowset *r, size_t row, unsigned i, const char *v)
{
	size_t l = strlen(v) + 1;

	if (text_room(r, l))
		return -ENOMEM;
	r->off[row * r->n_labels + i] = r->text_len;
	memcpy(r->text + r->text_len, v, l);
	r->text_len += l;
	return 0;
}

int xm_add(struct xm_snapshot *s, enum xm_id id, uint32_t row, uint32_t sub, uint64_t value)
{
	struct xm_family *f = &s->fam[id];

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct xm_sample *v = realloc(f->s, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->s = v;
		f->cap = cap;
	}
	f->s[f->n++] = (struct xm_sample){ row, sub, value };
	return 0;
}

unsigned xm_n_labels(const struct xm_family *f)
{
	return f->rows->n_labels + (f->sub_label ? 1u : 0u);
}

const char *xm_label_name(const struct xm_family *f, unsigned i)
{
	if (i < f->rows->n_labels)
		return f->rows->label_names[i];
	return i == f->rows->n_labels ? f->sub_label : NULL;
}

const char *xm_label_value(const struct xm_family *f, const struct xm_sample *s, unsigned i)
{
	const struct xm_rowset *r = f->rows;

	if (i < r->n_labels)
		return s->row < r->n_rows ? r->text + r->off[(size_t)s->row * r->n_labels + i] : "";
	if (i == r->n_labels && f->sub_label && s->sub < f->n_sub && f->sub_values[s->sub])
		return f->sub_values[s->sub];
	return "";
}

void xm_snapshot_free(struct xm_snapshot *s)
{
	struct xm_rowset *r[] = { &s->global, &s->sa, &s->worker, &s->tunnel, &s->build, &s->node };

	for (unsigned i = 0; i < XM_FAMILIES; i++) {
		free(s->fam[i].s);
		s->fam[i].s = NULL;
		s->fam[i].n = s->fam[i].cap = 0;
	}
	for (unsigned i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		free(r[i]->sa);
		free(r[i]->off);
		free(r[i]->text);
		r[i]->sa = NULL;
		r[i]->off = NULL;
		r[i]->text = NULL;
		r[i]->n_rows = r[i]->text_len = r[i]->text_cap = r[i]->off_cap = 0;
	}
}
