# tests/netns/test_mip6_flooder.py: test_mip6_flood.sh's Binding Update flood. One mobile node (the
# flooder) sends COUNT valid Binding Updates (ESP-protected with its own signalling SA, increasing
# ESP and Binding Update sequence numbers: each passes the replay window and the ICV) as fast as a
# packet socket takes them, and another mobile node's refreshes are mixed into the same stream at
# even intervals, so they reach the home agent while the flood fills its queue. The frames are built
# before the first is sent (scapy builds one Mobility Header per node; ESP is AES-GCM over it with
# python3-cryptography, RFC 4106: nonce = salt | IV, AAD = SPI | sequence number), so the rate is
# the socket's, not the encryption's. They go in bursts of BURST with a pause of GAP_MS between:
# the links between here and the home agent (veth pairs, a router namespace) queue at most
# net.core.netdev_max_backlog packets (1000 by default) and drop the rest, and the flood is to reach
# the home agent whole, so that what it drops is its own doing.
#
#   usage: test_mip6_flooder.py CONFIG.json
# CONFIG: {"iface", "mac", "gw_mac", "ha", "count", "burst", "gap_ms",
#          "flooder": NODE, "refresh": NODE + {"n": how many refreshes}}
#   NODE: {"hoa", "coa", "spi", "key" (hex, AES key + 4-byte salt), "esp_seq", "bu_seq", "lifetime"}
# Prints one JSON line when done: {"sent": N, "refresh_seqs": [...], "seconds": S}.
import json, logging, socket, struct, sys, time

logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from scapy.all import Ether, IPv6
from scapy.layers.inet6 import HAO, IPv6ExtHdrDestOpt, MIP6MH_BU, MIP6OptAltCoA

IPPROTO_ESP, IPPROTO_MH, ETH_P_IPV6 = 50, 135, 0x86dd
MH_OFF = 40 + 24  # the Mobility Header follows the IPv6 header and the Home Address option's header


def cksum_update(ck, old, new):
    # RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')
    s = (~ck & 0xffff) + (~old & 0xffff) + new
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


class Node:
    def __init__(self, c, ha, eth):
        self.spi, self.esp_seq, self.bu_seq = c['spi'], c['esp_seq'], c['bu_seq']
        key = bytes.fromhex(c['key'])
        self.aead, self.salt = AESGCM(key[:-4]), key[-4:]
        mh = MIP6MH_BU(seq=0, flags='AH', mhtime=c['lifetime'] // 4, options=[MIP6OptAltCoA(acoa=c['coa'])])
        p = bytes(IPv6(bytes(IPv6(src=c['coa'], dst=ha) / IPv6ExtHdrDestOpt(options=[HAO(hoa=c['hoa'])]) / mh)))
        self.mh = bytearray(p[MH_OFF:])
        self.mh_ck = struct.unpack('!H', self.mh[4:6])[0]  # checksum of the template with seq 0
        pad = -(len(self.mh) + 2) % 4
        self.trailer = bytes(range(1, pad + 1)) + bytes([pad, IPPROTO_MH])
        esp_len = 8 + 8 + len(self.mh) + len(self.trailer) + 16
        hdr = bytearray(p[:MH_OFF])
        hdr[40] = IPPROTO_ESP                      # the destination options header's next header
        struct.pack_into('!H', hdr, 4, 24 + esp_len)  # IPv6 payload length
        self.head = eth + bytes(hdr)

    def frame(self):
        seq = self.bu_seq & 0xffff
        mh = self.mh
        struct.pack_into('!HH', mh, 4, cksum_update(self.mh_ck, 0, seq), seq)
        spi_seq = struct.pack('!II', self.spi, self.esp_seq)
        iv = struct.pack('!Q', self.esp_seq)
        ct = self.aead.encrypt(self.salt + iv, bytes(mh) + self.trailer, spi_seq)
        self.esp_seq += 1
        self.bu_seq += 1
        return self.head + spi_seq + iv + ct, seq


def main():
    cfg = json.load(open(sys.argv[1]))
    eth = bytes(Ether(src=cfg['mac'], dst=cfg['gw_mac'], type=ETH_P_IPV6))[:14]
    flooder, victim = Node(cfg['flooder'], cfg['ha'], eth), Node(cfg['refresh'], cfg['ha'], eth)
    count, n_ref = cfg['count'], cfg['refresh']['n']
    every = count // (n_ref + 1)
    frames, ref_seqs = [], []
    for i in range(count):
        if n_ref and i and i % every == 0 and len(ref_seqs) < n_ref:
            f, seq = victim.frame()
            frames.append(f)
            ref_seqs.append(seq)
        frames.append(flooder.frame()[0])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IPV6))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 24)
    s.bind((cfg['iface'], 0))
    t = time.monotonic()
    sent = 0
    for i, f in enumerate(frames):
        if i and i % cfg['burst'] == 0:
            time.sleep(cfg['gap_ms'] / 1000)
        s.send(f)
        sent += 1
    print(json.dumps({'sent': sent, 'refresh_seqs': ref_seqs, 'seconds': round(time.monotonic() - t, 3)}),
          flush=True)


if __name__ == '__main__':
    main()
