/* metrics/metrics_prom.c: the Prometheus text exposition format, version 0.0.4, of a metrics snapshot
 * (metrics/metrics.h): per family a "# HELP" and a "# TYPE" line, then one line per sample,
 * name{label="value",...} value. Label values escape backslash, double quote and newline; help
 * texts backslash and newline, as the format says. Every family is written, even without samples,
 * so a scrape always lists the same HELP/TYPE set. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>

#include "metrics/metrics.h"

static void escape(FILE *f, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			putc(*s, f);
	}
}

void xm_prom_label_escape(FILE *f, const char *s)
{
	escape(f, s, true);
}

void xm_prom_help_escape(FILE *f, const char *s)
{
	escape(f, s, false);
}

int xm_prom_write(FILE *f, const struct xm_snapshot *snap)
{
	for (unsigned i = 0; i < XM_FAMILIES; i++) {
		const struct xm_family *fam = &snap->fam[i];
		unsigned nl = xm_n_labels(fam);

		fprintf(f, "# HELP %s ", fam->name);
		xm_prom_help_escape(f, fam->help);
		fprintf(f, "\n# TYPE %s %s\n", fam->name, fam->type == XM_COUNTER ? "counter" : "gauge");
		for (size_t j = 0; j < fam->n; j++) {
			const struct xm_sample *s = &fam->s[j];

			fputs(fam->name, f);
			for (unsigned l = 0; l < nl; l++) {
				fprintf(f, "%s%s=\"", l ? "," : "{", xm_label_name(fam, l));
				xm_prom_label_escape(f, xm_label_value(fam, s, l));
				putc('"', f);
			}
			fprintf(f, "%s %" PRIu64 "\n", nl ? "}" : "", s->value);
		}
	}
	return ferror(f) ? -EIO : 0;
}
