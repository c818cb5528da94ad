# tests/build/install_common.sh: sourced by the install tests (not a test itself). inst_dest DIR runs
# `make install DESTDIR=DIR` in the build tree; after it, $sbindir, $pkglibdir, $mandir, $sysconfdir,
# $systemdsystemunitdir and $have_strongswan hold the build's configured values (from the Makefile,
# so they are the paths compiled into the programs and substituted into the units).
: "${top_srcdir:?}" "${top_builddir:?}"
MAKE=${MAKE:-make}
inst_dirs() {
	local line
	while IFS= read -r line; do
		case $line in
		sbindir=*|pkglibdir=*|mandir=*|sysconfdir=*|systemdsystemunitdir=*|have_strongswan=*)
			eval "${line%%=*}=\${line#*=}" ;;
		esac
	done < <($MAKE -s --no-print-directory -C "$top_builddir" print-install-dirs)
	[ -n "${sbindir:-}" ] && [ -n "${systemdsystemunitdir:-}" ] || { echo "FAIL: no install dirs from the Makefile"; exit 1; }
}
inst_dest() {
	inst_dirs
	$MAKE -s --no-print-directory -C "$top_builddir" install DESTDIR="$1" > "$1.log" 2>&1 ||
		{ cat "$1.log"; echo "FAIL: make install DESTDIR=$1"; exit 1; }
}
