#!/bin/bash
# tests/netns/test_ike_psk.sh: two xipsec-iked in two namespaces negotiate with a pre-shared key,
# IKEv2 (IKE_SA_INIT + IKE_AUTH) and IKEv1 (Main Mode + Quick Mode), and each installs its SAs into its
# own SADB. Checks: both CHILD_SAs establish; each SADB holds 2 SAs per CHILD_SA, with A's inbound SAs
# equal (SPI, endpoints, transform, key fingerprint, NAT-T ports) to B's outbound SAs and vice versa;
# each side has its in/out/fwd policies; terminating removes the SAs and policies on both sides.
# Then IKEv2 over IPv6 with IPv6 selectors (the SADB is family-neutral end to end).
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
ike_pair

conf() { # SIDE ME PEER MYNET PEERNET ME6 PEER6 MYNET6 PEERNET6
	ike_swanctl "$1" "$2" "$3" \
		conn v6 2 aes128gcm16-prfsha256-x25519 local_addrs="$6" remote_addrs="$7" \
			child net6 "$8" "$9" chacha20poly1305 \
		conn v2 2 aes256gcm16-prfsha384-ecp384 \
			child net2 "$4.2.0/24" "$5.2.0/24" aes256gcm16 \
		conn v1 1 aes128-sha256-modp2048 \
			child net1 "$4.1.0/24" "$5.1.0/24" aes128-sha256
}
for s in A B; do ike_dirs $s; done
conf A 10.9.0.1 10.9.0.2 10.1 10.2 fd00::1 fd00::2 fd01::/64 fd02::/64
conf B 10.9.0.2 10.9.0.1 10.2 10.1 fd00::2 fd00::1 fd02::/64 fd01::/64
ip -n "$(xt_ns A)" -6 addr add fd00::1/64 dev va nodad
ip -n "$(xt_ns B)" -6 addr add fd00::2/64 dev vb nodad
ike_start A
ike_start B

ike_ctl A --initiate --child net2 >/dev/null || { ike_logs; xt_fail "IKEv2 initiate failed"; }
ike_ctl A --initiate --child net1 >/dev/null || { ike_logs; xt_fail "IKEv1 initiate failed"; }

# the responder may install its last SA just after the initiator returns
xt_wait 5 ike_nsa B 4 || { ike_dump B >&2; ike_logs; xt_fail "B's SADB does not hold 4 SAs"; }
[ "$(ike_dump A | wc -l)" -eq 4 ] || { ike_dump A >&2; xt_fail "A's SADB does not hold 4 SAs"; }
n=$(ike_match A B) || exit 1
[ "$n" -eq 4 ] || xt_fail "expected 4 matching SAs, got $n"

# transforms as negotiated, key material of the right size (fingerprints matched above)
ike_dump A | grep -q "enc=aes-gcm-16.* | dir=in" || { ike_dump A >&2; xt_fail "no inbound AES-GCM SA"; }
ike_dump A --show-keys | grep "enc=aes-gcm-16" | grep -Eq "enc_key=[0-9a-f]{72} " ||
	{ ike_dump A >&2; xt_fail "AES-256-GCM SA does not carry 32+4 key bytes"; }
ike_dump A --show-keys | grep "enc=aes-cbc" | grep -Eq "enc_key=[0-9a-f]{32} auth_key=[0-9a-f]{64}" ||
	{ ike_dump A >&2; xt_fail "AES-128-CBC/HMAC-SHA256 SA does not carry 16 + 32 key bytes"; }
# the SPIs charon reports are the ones in the SADB
spi_in=$(ike_ctl A --list-sas --ike v2 | awk '$1 == "in" {print $2; exit}' | tr -d ',')
[ -n "$spi_in" ] || { ike_ctl A --list-sas >&2; xt_fail "no inbound SPI listed by swanctl"; }
ike_dump A | grep -q "spi=$spi_in .* | dir=in" || { ike_dump A >&2; xt_fail "inbound SPI $spi_in of charon not in the SADB"; }

# the IKEv1 SA came from a Main Mode, the IKEv2 one from IKE_SA_INIT/IKE_AUTH
grep -q "xipsec: Main Mode established IKE_SA v1" "$XT_DIR/iked-A.log" || { ike_logs; xt_fail "no Main Mode logged"; }
grep -q "xipsec: IKE_SA_INIT/IKE_AUTH established IKE_SA v2" "$XT_DIR/iked-A.log" || xt_fail "no IKEv2 IKE_SA logged"
[ "$(ike_status A main_modes)" = 1 ] || xt_fail "status: main_modes $(ike_status A main_modes), expected 1"

# policies: in, out, fwd for each CHILD_SA, PROTECT, ESP, tunnel mode
np=$(ike_dump A --policies | grep -c "action=1 proto=50 mode=2")
[ "$np" -eq 6 ] || { ike_dump A --policies >&2; xt_fail "A has $np IPsec policies, expected 6"; }

# ipsecctl ike lists both IKE SAs (when ipsecctl is built)
if out=$(ike_ipsecctl A list); then
	echo "$out" | grep -q "^v1\[.*IKEv1 ESTABLISHED" || { echo "$out" >&2; xt_fail "ipsecctl ike list: no IKEv1 SA"; }
	echo "$out" | grep -q "^v2\[.*IKEv2 ESTABLISHED" || { echo "$out" >&2; xt_fail "ipsecctl ike list: no IKEv2 SA"; }
	echo "$out" | grep -q "net1\[.*INSTALLED TUNNEL ESP" || { echo "$out" >&2; xt_fail "ipsecctl ike list: no CHILD SA net1"; }
	ike_ipsecctl A terminate --ike v2 || xt_fail "ipsecctl ike terminate failed"
	# bad input: a clear error and the right exit code (2 usage, 1 runtime), nothing changed
	ctl="$top_builddir/ipsecctl/ipsecctl"
	out=$("$ctl" ike --run-dir "$XT_DIR/nowhere" list 2>&1); rc=$?
	[ "$rc" -eq 1 ] && echo "$out" | grep -q "cannot connect to xipsec-iked" || xt_fail "ike list without a daemon: rc $rc: $out"
	"$ctl" ike bogus >/dev/null 2>&1; [ $? -eq 2 ] || xt_fail "ike bogus: not a usage error"
	XIPSEC_IKED_RUN="$XT_DIR/A/run" "$ctl" ike maxqm set -5 >/dev/null 2>&1; [ $? -eq 2 ] || xt_fail "maxqm set -5 accepted"
	XIPSEC_IKED_RUN="$XT_DIR/A/run" "$ctl" ike initiate >/dev/null 2>&1; [ $? -eq 2 ] || xt_fail "initiate without a name accepted"
	out=$(XIPSEC_IKED_RUN="$XT_DIR/A/run" "$ctl" ike initiate --child nosuch 2>&1); rc=$?
	[ "$rc" -eq 1 ] && echo "$out" | grep -q "not found" || xt_fail "initiate of an unknown CHILD: rc $rc: $out"
else
	[ $? -eq 77 ] || xt_fail "ipsecctl ike list failed"
	xt_log "ipsecctl not built: terminating with swanctl"
	ike_ctl A --terminate --ike v2 >/dev/null || xt_fail "terminate failed"
fi
xt_wait 5 ike_nsa B 2 || { ike_dump B >&2; xt_fail "B kept the IKEv2 SAs after terminate"; }
[ "$(ike_dump A | wc -l)" -eq 2 ] || { ike_dump A >&2; xt_fail "A kept the IKEv2 SAs after terminate"; }
ike_dump A | grep -q "enc=aes-gcm" && xt_fail "the AES-GCM (IKEv2) SAs are still in A's SADB"
n=$(ike_match A B) || exit 1
[ "$n" -eq 2 ] || xt_fail "expected the 2 IKEv1 SAs left, got $n"
if ike_dump A --policies | grep -q "10.1.2.0/24\|10.2.2.0/24"; then
	ike_dump A --policies >&2; xt_fail "IKEv2 policies left behind"
fi

# ---- IPv6 ----
ike_ctl A --initiate --child net6 >/dev/null || { ike_logs; xt_fail "IKEv2 over IPv6 failed"; }
xt_wait 5 ike_nsa B 4 || { ike_dump B >&2; xt_fail "B does not hold the 2 IPv6 SAs"; }
n=$(ike_match A B) || exit 1
[ "$n" -eq 4 ] || xt_fail "expected 4 matching SAs with IPv6, got $n"
ike_dump A | grep -q "src=fd00::2 dst=fd00::1 enc=chacha20-poly1305.* | dir=in .*sel=fd02::/64->fd01::/64" ||
	{ ike_dump A >&2; xt_fail "no inbound IPv6 ChaCha20-Poly1305 SA with IPv6 selectors"; }
ike_dump A --show-keys | grep "chacha20" | grep -Eq "enc_key=[0-9a-f]{72} " ||
	{ ike_dump A >&2; xt_fail "ChaCha20-Poly1305 SA does not carry 32+4 key bytes"; }
ike_check_logs
xt_log "PASS: IKEv2 and IKEv1 Main+Quick Mode with PSK, IKEv2 over IPv6: SADBs match on both sides"
exit 0
