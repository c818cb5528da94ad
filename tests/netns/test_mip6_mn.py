# tests/netns/test_mip6_mn.py: a Mobile IPv6 mobile node for test_mip6_ha.sh and
# test_dp_replay_reboot.sh (mip6_common.sh starts it), built on scapy's Mobile IPv6 layers and its
# SecurityAssociation (nobody here wrote them). It registers with the home agent
# (Binding Updates with a Home Address option and, as RFC 3776 3.1 requires, the care-of address in
# an Alternate Care-of Address option, which ESP transport mode protects), reports every Binding
# Acknowledgement it receives, and terminates its end of the ESP tunnel to the home agent: packets
# the local kernel sends from the home address (a TUN device holds it) are tunnelled from the current
# care-of address; tunnelled packets from the home agent are decrypted into the TUN device.
#
#   usage: test_mip6_mn.py CONFIG.json FIFO   commands from FIFO, one per line; events on stdout (JSON)
# CONFIG: {"hoa", "ha", "tun", "links": {IFACE: {"coa", "gw_mac"}}, "sa": {"bu": {spi, key},
#          "ba": {...}, "tun_out": {...}, "tun_in": {...}}, "crypt_algo"}   (keys hex, AES-GCM: key+salt)
# Commands:
#   bu IFACE SEQ LIFETIME [FLAGS [P/LEN...]]  a Binding Update from IFACE's care-of address (FLAGS:
#                                   scapy's, "AH"; "AHR" a mobile router's), ESP-protected, with a
#                                   Mobile Network Prefix option (RFC 3963 4.3) per P/LEN; the tunnel
#                                   follows to IFACE
#   bu-plain IFACE SEQ LIFETIME     the same without ESP (an unprotected one: must go unanswered)
#   bu-hoa IFACE SEQ LIFETIME HOA   protected, but its Home Address option names another address
#   bu-trunc IFACE SEQ              protected, with a Mobility Header whose length field lies
#   bu-spoof IFACE SEQ LIFETIME SRC the BU `bu` would send, its outer source rewritten to SRC after
#                                   ESP (as an on-path attacker would: ESP does not cover it)
#   bu-alt IFACE SEQ LIFETIME ALT   protected, from IFACE's care-of address, but its Alternate
#                                   Care-of Address option names ALT (a mobile node pointing its
#                                   tunnel at a third party)
#   mh-bad IFACE KIND [N]           N (default 1) protected Binding Updates 20 ms apart, broken after
#                                   scapy built them (checksum fixed again but for `cksum`): KIND
#                                   type (MH type 42), proto (Payload Proto 6), short (Header Len 0),
#                                   cksum (a wrong checksum)
#   hoti CN                         a Home Test Init to CN through the tunnel (RFC 6275 5.2.5: reverse
#                                   tunnelled from the home address)
#   mps IFACE ID                    a Mobile Prefix Solicitation (RFC 6275 6.7) with identifier ID from
#                                   IFACE's care-of address with a Home Address option, ESP-protected
#                                   by the signalling SA (RFC 3776 4.2)
#   mps-plain IFACE ID              the same without ESP (must go unanswered)
#   bu4 IFACE SEQ LIFETIME [V4HOA|-] [udp]   DSMIPv6 (RFC 5555 4.1): a Binding Update from the home
#                                   address with an IPv4 Care-of Address option (IFACE's "coa4", and an
#                                   IPv4 Home Address option V4HOA when given), ESP-protected, in IPv4
#                                   from coa4 to the home agent's "ha4" (CONFIG "v4"), with udp in UDP
#                                   from port 4500 to 4191; the tunnel follows, ESP in IPv4 (with udp
#                                   ESP in UDP, RFC 3948, from and to port 4500)
#   counts                          print the counters
# Events: {"ev": "ba", ...fields} for every Binding Acknowledgement, {"ev": "be", ...} for every
# Binding Error, {"ev": "brr", ...} for every Binding Refresh Request, {"ev": "pp", ...} for every ICMPv6
# Parameter Problem through the tunnel, {"ev": "mpa", ...fields} for every Mobile Prefix Advertisement,
# {"ev": "ba4", ...fields, v4_src, v4_dst, opts} for every Binding Acknowledgement in IPv4 (opts: its
# mobility options after the fixed part, [type, hex data] each),
# {"ev": "sent", ...} per command.
import fcntl, json, logging, os, select, socket, struct, sys, time

logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import Ether, IP, IPv6, ESP, Raw, UDP
from scapy.layers.inet6 import (HAO, ICMPv6MPAdv, ICMPv6MPSol, ICMPv6NDOptPrefixInfo, ICMPv6ParamProblem,
                                IPv6ExtHdrDestOpt, IPv6ExtHdrRouting, MIP6MH_BA, MIP6MH_BE, MIP6MH_BRR,
                                MIP6MH_BU, MIP6MH_HoTI, MIP6OptAltCoA, MIP6OptBRAdvice, MIP6OptMobNetPrefix,
                                MIP6OptUnknown,
                                in6_chksum)
from scapy.layers.ipsec import SecurityAssociation

TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454ca, 0x0001, 0x1000
ETH_P_IPV6 = 0x86dd


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    cfg = json.load(open(sys.argv[1]))
    hoa, ha = cfg['hoa'], cfg['ha']
    algo = cfg.get('crypt_algo', 'AES-GCM')

    def sa(name, hdr=None):
        c = cfg['sa'][name]
        return SecurityAssociation(ESP, spi=c['spi'], crypt_algo=algo, crypt_key=bytes.fromhex(c['key']),
                                   tunnel_header=hdr)
    bu_sa, ba_sa = sa('bu'), sa('ba')
    tun_in = sa('tun_in', IPv6(src=ha, dst=hoa))
    links = cfg['links']
    cur = next(iter(links))
    tun_out = sa('tun_out', IPv6(src=links[cur]['coa'], dst=ha))

    tun = os.open('/dev/net/tun', os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack('16sH', cfg['tun'].encode(), IFF_TUN | IFF_NO_PI))
    socks = {}
    for ifc in links:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IPV6))
        s.bind((ifc, 0))
        socks[s] = ifc
        links[ifc]['mac'] = ':'.join('%02x' % b for b in s.getsockname()[4][:6])
    # The kernel has no ESP: a raw ESP socket takes what reaches it, so it answers no ESP packet
    # with an ICMPv6 error (what this process decrypts comes from the packet sockets above).
    absorb = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ESP)
    # DSMIPv6: IPv4 links get a packet socket for IPv4 too; ESP and IPv6 in IPv4 are absorbed as above
    v4 = cfg.get('v4', {})
    socks4 = {}
    for ifc in v4.get('links', {}):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        s.bind((ifc, 0))
        socks4[s] = ifc
        v4['links'][ifc]['mac'] = ':'.join('%02x' % b for b in s.getsockname()[4][:6])
    absorb4 = [socket.socket(socket.AF_INET, socket.SOCK_RAW, pr) for pr in (socket.IPPROTO_ESP, 41)] if v4 else []
    if v4:  # and ESP in UDP to port 4500, and the acknowledgements from 4191
        absorb4.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        absorb4[-1].bind(('0.0.0.0', 4500))
    n = {'ba': 0, 'tun_rx': 0, 'tun_tx': 0, 'bad': 0, 'seen_esp': {}}

    def send(ifc, pkt):
        links_ifc = links[ifc] if ifc in links else v4['links'][ifc]  # an IPv4-only link: CONFIG "v4"
        if IP in pkt and UDP in pkt:
            # scapy's ESP in UDP (nat_t_header) leaves the UDP length at 8: the whole datagram's
            pkt = IP(bytes(pkt))
            pkt[UDP].len, pkt[UDP].chksum = len(pkt[UDP]), 0
        frame = Ether(src=links_ifc['mac'], dst=links_ifc['gw_mac']) / pkt
        for s, i in list(socks.items()) + list(socks4.items()):
            if i == ifc:
                s.send(bytes(frame))
                break

    def bu(ifc, seq, lifetime, flags='AH', hoa_opt=None, protect=True, trunc=False, alt=None, spoof=None, mnp=()):
        coa = links[ifc]['coa']
        mnp_opts = [MIP6OptMobNetPrefix(prefix=q.split('/')[0], plen=int(q.split('/')[1])) for q in mnp]
        mh = MIP6MH_BU(seq=seq, flags=flags, mhtime=lifetime // 4, options=[MIP6OptAltCoA(acoa=alt or coa)] + mnp_opts)
        p = IPv6(src=coa, dst=ha) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa_opt or hoa)]) / mh
        p = IPv6(bytes(p))  # scapy computes the checksum (with the home address, RFC 6275 6.1.1)
        if trunc:
            raw = bytearray(bytes(p))
            # the Mobility Header's length field (after IPv6 40 + DestOpt 24) says 3 units more
            raw[40 + 24 + 1] += 3
            p = IPv6(bytes(raw))
        if protect:
            p = bu_sa.encrypt(p)
        if spoof:
            # the IPv6 header is outside ESP's ICV and, with a Home Address option, outside the
            # Mobility Header's checksum too: the packet stays valid for everything but its origin
            p = IPv6(bytes(p))
            p.src = spoof
            p = IPv6(bytes(p))
        send(ifc, p)
        return coa

    def mh_bad(ifc, seq, kind):
        coa = links[ifc]['coa']
        p = IPv6(bytes(IPv6(src=coa, dst=ha) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa)]) /
                       MIP6MH_BU(seq=seq, flags='AH', mhtime=15, options=[MIP6OptAltCoA(acoa=coa)])))
        raw = bytearray(bytes(p))
        mh = 40 + 24
        at, val = {'type': (2, 42), 'proto': (0, 6), 'short': (1, 0), 'cksum': (4, raw[mh + 4] ^ 0xff)}[kind]
        raw[mh + at] = val
        if kind != 'cksum':
            n = (raw[mh + 1] + 1) * 8
            raw[mh + 4:mh + 6] = b'\0\0'
            # the pseudo-header's source is the home address (RFC 6275 6.1.1); scapy's sum
            s = in6_chksum(135, IPv6(src=hoa, dst=ha), bytes(raw[mh:mh + n]))
            raw[mh + 4:mh + 6] = struct.pack('!H', s)
        send(ifc, bu_sa.encrypt(IPv6(bytes(raw))))

    tun_ifc = cur
    # read-write, so that the FIFO never reports end-of-file between the test's commands
    cmd = os.fdopen(os.open(sys.argv[2], os.O_RDWR | os.O_NONBLOCK), 'r')
    pending = ''
    out(ev='ready')
    while True:
        r, _, _ = select.select([tun, cmd, absorb] + list(socks) + list(socks4) + absorb4, [], [], 1.0)
        for a in [absorb] + absorb4:
            if a in r:
                a.recv(65535)
        lines = []
        if cmd in r:
            pending += cmd.read() or ''
            *lines, pending = pending.split('\n')
        for line in lines:
            a = line.split()
            if not a:
                continue
            if a[0] in ('bu', 'bu-plain', 'bu-hoa', 'bu-trunc', 'bu-spoof', 'bu-alt'):
                ifc, seq = a[1], int(a[2])
                life = int(a[3]) if len(a) > 3 else 60
                if a[0] == 'bu':
                    coa = bu(ifc, seq, life, flags=a[4] if len(a) > 4 else 'AH', mnp=a[5:])
                    tun_ifc = ifc
                    tun_out.tunnel_header = IPv6(src=coa, dst=ha)
                elif a[0] == 'bu-plain':
                    coa = bu(ifc, seq, life, protect=False)
                elif a[0] == 'bu-hoa':
                    coa = bu(ifc, seq, life, hoa_opt=a[4])
                elif a[0] == 'bu-spoof':
                    coa = bu(ifc, seq, life, spoof=a[4])
                elif a[0] == 'bu-alt':
                    coa = bu(ifc, seq, life, alt=a[4])
                else:
                    coa = bu(ifc, seq, 60, trunc=True)
                out(ev='sent', cmd=a[0], iface=ifc, coa=coa, seq=seq, esp_seq=bu_sa.seq_num)
            elif a[0] == 'mh-bad':
                for i in range(int(a[3]) if len(a) > 3 else 1):
                    mh_bad(a[1], 100 + i, a[2])
                    time.sleep(0.02)
                out(ev='sent', cmd='mh-bad', kind=a[2], esp_seq=bu_sa.seq_num)
            elif a[0] in ('mps', 'mps-plain'):
                ifc, coa = a[1], links[a[1]]['coa']
                p = IPv6(src=coa, dst=ha) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa)]) / ICMPv6MPSol(id=int(a[2]))
                p = IPv6(bytes(p))  # the ICMPv6 checksum with the home address as source (RFC 6275 6.3)
                send(ifc, bu_sa.encrypt(p) if a[0] == 'mps' else p)
                out(ev='sent', cmd=a[0], iface=ifc, coa=coa, id=int(a[2]))
            elif a[0] == 'hoti':
                p = IPv6(bytes(IPv6(src=hoa, dst=a[1]) / MIP6MH_HoTI(cookie=bytes.fromhex('1122334455667788'))))
                send(tun_ifc, tun_out.encrypt(p))
                out(ev='sent', cmd='hoti', iface=tun_ifc)
            elif a[0] == 'bu4':
                ifc, seq, life = a[1], int(a[2]), int(a[3])
                coa4 = v4['links'][ifc]['coa4']
                opts = [MIP6OptUnknown(otype=32, odata=b'\0\0' + socket.inet_aton(coa4))]
                if len(a) > 4 and a[4] != '-':
                    opts.append(MIP6OptUnknown(otype=29, odata=b'\0\0' + socket.inet_aton(a[4])))
                udp = len(a) > 5 and a[5] == 'udp'
                p = IPv6(bytes(IPv6(src=hoa, dst=ha) / MIP6MH_BU(seq=seq, flags='AH', mhtime=life // 4,
                                                                 options=opts)))
                outer = IP(src=coa4, dst=v4['ha4'])
                send(ifc, (outer / UDP(sport=4500, dport=4191) if udp else outer) / bu_sa.encrypt(p))
                tun_ifc = ifc
                tun_out.tunnel_header = IP(src=coa4, dst=v4['ha4'])
                tun_out.nat_t_header = UDP(sport=4500, dport=4500) if udp else None
                if udp:  # a NAT-keepalive (RFC 3948 2.3) opens the NAT's way back for ESP in UDP
                    send(ifc, IP(src=coa4, dst=v4['ha4']) / UDP(sport=4500, dport=4500) / Raw(b'\xff'))
                out(ev='sent', cmd='bu4', iface=ifc, coa4=coa4, seq=seq, esp_seq=bu_sa.seq_num)
            elif a[0] == 'counts':
                out(ev='counts', **n)
        if tun in r:
            pkt = os.read(tun, 65535)
            if pkt[0] >> 4 == 6:
                send(tun_ifc, tun_out.encrypt(IPv6(pkt)))
                n['tun_tx'] += 1
        for s in [x for x in r if x in socks4]:
            ip = Ether(s.recv(65535))[IP]
            if ip.dst != v4['links'][socks4[s]]['coa4'] or ip.proto not in (17, 41, 50):
                continue
            try:
                # what follows the IPv4 header, and its UDP header if any (ESP in UDP from port 4500,
                # signalling from 4191)
                body, sport = (bytes(ip[UDP].payload), ip[UDP].sport) if ip.proto == 17 else (bytes(ip.payload), None)
                if ip.proto == 17 and sport not in (4191, 4500):
                    continue
                if (ip.proto == 50 or sport == 4500) and ESP(body).spi == cfg['sa']['tun_in']['spi']:
                    os.write(tun, bytes(tun_in.decrypt(IP(src=ip.src, dst=ip.dst) / ESP(body))))
                    n['tun_rx'] += 1
                    continue
                ip6 = IPv6(body)
                if ESP not in ip6 or ip6[ESP].spi != cfg['sa']['ba']['spi']:
                    continue
                spi = ip6[ESP].spi  # scapy's decryption takes ESP off ip6
                body = bytes(ba_sa.decrypt(ip6).payload)
                ba = IPv6(bytes(IPv6(src=ip6.src, dst=ip6.dst) / MIP6MH_BA(body)))
                again = IPv6(bytes(ba))
                del again[MIP6MH_BA].cksum
                opts, off = [], 12
                while off + 2 <= len(body):
                    if body[off] == 0:
                        off += 1
                        continue
                    if body[off] != 1:
                        opts.append([body[off], body[off + 2:off + 2 + body[off + 1]].hex()])
                    off += 2 + body[off + 1]
                b = ba[MIP6MH_BA]
                out(ev='ba4', iface=socks4[s], v4_src=ip.src, v4_dst=ip.dst, v4_proto=ip.proto,
                    udp_sport=sport, udp_dport=ip[UDP].dport if sport else None, src=ip6.src,
                    dst=ip6.dst, nh=50, esp_spi=spi, status=b.status, seq=b.seq,
                    lifetime=b.mhtime * 4, opts=opts,
                    cksum_ok=IPv6(bytes(again))[MIP6MH_BA].cksum == b.cksum)
                n['ba'] += 1
            except Exception as ex:  # a bad packet is counted, never fatal
                n['bad'] += 1
                out(ev='bad', error=repr(ex))
        for s in [x for x in r if x in socks]:
            data = s.recv(65535)
            try:
                p = Ether(data)
            except Exception:
                continue
            if IPv6 not in p or ESP not in p or p[IPv6].dst not in [l['coa'] for l in links.values()]:
                continue
            spi = p[ESP].spi
            n['seen_esp'][socks[s]] = n['seen_esp'].get(socks[s], 0) + 1
            try:
                if spi == cfg['sa']['ba']['spi']:
                    ip = p[IPv6]
                    rh = ip[IPv6ExtHdrRouting] if IPv6ExtHdrRouting in ip else None
                    # scapy's transport-mode decryption mistakes what follows ESP for the header
                    # in front of it when that is an extension header: decrypt the ESP alone (its
                    # ICV covers nothing before it), then put the routing header back
                    flat = ba_sa.decrypt(IPv6(bytes(IPv6(src=ip.src, dst=ip.dst, nh=50) / Raw(bytes(ip[ESP])))))
                    dec = IPv6(src=ip.src, dst=ip.dst) / (
                        IPv6ExtHdrRouting(type=rh.type, segleft=rh.segleft, addresses=rh.addresses) if rh else Raw(b''))
                    if flat.nh == 58:
                        # a Mobile Prefix Advertisement: scapy reads it and its Prefix Information
                        # options, and computes the checksum again (the routing header's address
                        # as the pseudo-header's destination)
                        raw = bytes(flat.payload)
                        dec = IPv6(bytes(dec / ICMPv6MPAdv(raw[:8])))
                        mpa, opts, off = dec[ICMPv6MPAdv], [], 8
                        while off + 32 <= len(raw):
                            o = ICMPv6NDOptPrefixInfo(raw[off:off + 32])
                            opts.append({'prefix': '%s/%d' % (o.prefix, o.prefixlen), 'L': int(o.L), 'A': int(o.A),
                                         'valid': o.validlifetime, 'preferred': o.preferredlifetime})
                            off += 32
                        again = IPv6(bytes(IPv6(src=ip.src, dst=ip.dst) / IPv6ExtHdrRouting(
                            type=rh.type, segleft=rh.segleft, addresses=rh.addresses) / ICMPv6MPAdv(raw)))
                        again[ICMPv6MPAdv].cksum = None
                        out(ev='mpa', iface=socks[s], src=ip.src, dst=ip.dst, esp_spi=spi, code=mpa.code,
                            type=mpa.type, id=mpa.id, prefixes=opts, rest=len(raw) - off,
                            rh_type=rh.type if rh else None, rh_segleft=rh.segleft if rh else None,
                            rh_addr=rh.addresses[0] if rh and rh.addresses else None,
                            cksum_ok=IPv6(bytes(again))[ICMPv6MPAdv].cksum == mpa.cksum)
                        continue
                    body = bytes(flat.payload)
                    if len(body) > 2 and body[2] == 7:
                        be = IPv6(bytes(dec / MIP6MH_BE(body)))
                        chk = be[MIP6MH_BE].cksum
                        be2 = IPv6(bytes(be))
                        del be2[MIP6MH_BE].cksum
                        out(ev='be', iface=socks[s], src=ip.src, dst=ip.dst, esp_spi=spi,
                            status=be[MIP6MH_BE].status, hoa=be[MIP6MH_BE].ha,
                            rh_type=rh.type if rh else None, rh_segleft=rh.segleft if rh else None,
                            rh_addr=rh.addresses[0] if rh and rh.addresses else None,
                            cksum_ok=IPv6(bytes(be2))[MIP6MH_BE].cksum == chk)
                        n['be'] = n.get('be', 0) + 1
                        continue
                    if len(body) > 2 and body[2] == 0:
                        brr = IPv6(bytes(dec / MIP6MH_BRR(body)))
                        chk = brr[MIP6MH_BRR].cksum
                        brr2 = IPv6(bytes(brr))
                        del brr2[MIP6MH_BRR].cksum
                        out(ev='brr', iface=socks[s], src=ip.src, dst=ip.dst, esp_spi=spi, t=time.time(),
                            rh_addr=rh.addresses[0] if rh and rh.addresses else None,
                            cksum_ok=IPv6(bytes(brr2))[MIP6MH_BRR].cksum == chk)
                        continue
                    dec = IPv6(bytes(dec / MIP6MH_BA(body)))
                    ba = dec[MIP6MH_BA]
                    chk = ba.cksum
                    ba2 = IPv6(bytes(dec))
                    del ba2[MIP6MH_BA].cksum
                    out(ev='ba', iface=socks[s], src=ip.src, dst=ip.dst, esp_spi=spi, esp_seq=p[ESP].seq,
                        status=ba.status, seq=ba.seq, lifetime=ba.mhtime * 4, flags=int(ba.flags),
                        rh_type=rh.type if rh else None, rh_segleft=rh.segleft if rh else None,
                        rh_addr=rh.addresses[0] if rh and rh.addresses else None,
                        cksum_ok=IPv6(bytes(ba2))[MIP6MH_BA].cksum == chk, t=time.time(),
                        refresh=next((o.rinter * 4 for o in ba.options if isinstance(o, MIP6OptBRAdvice)), None))
                    n['ba'] += 1
                elif spi == cfg['sa']['tun_in']['spi']:
                    inner = tun_in.decrypt(IPv6(bytes(p[IPv6])))
                    if ICMPv6ParamProblem in inner:
                        pp = inner[ICMPv6ParamProblem]
                        chk = pp.cksum
                        pp2 = IPv6(bytes(inner))
                        del pp2[ICMPv6ParamProblem].cksum
                        out(ev='pp', src=inner.src, dst=inner.dst, code=pp.code, ptr=pp.ptr,
                            quote=bytes(pp.payload)[:96].hex(), esp_spi=spi,
                            cksum_ok=IPv6(bytes(pp2))[ICMPv6ParamProblem].cksum == chk)
                    os.write(tun, bytes(inner))
                    n['tun_rx'] += 1
            except Exception as ex:  # a bad packet is counted, never fatal
                n['bad'] += 1
                out(ev='bad', spi=spi, error=repr(ex))


if __name__ == '__main__':
    main()
