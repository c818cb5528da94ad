# tests/netns/test_dp_scapy_peer.py: an independent IPsec peer gateway for test_dp_scapy.sh, built on
# scapy's SecurityAssociation (nobody here wrote it). Plaintext the local kernel routes into a TUN
# device is encrypted and sent to the peer over raw IP sockets; ESP received on raw sockets is
# decrypted and written into the TUN device, from where the kernel forwards it on.
#   usage: test_dp_scapy_peer.py TUN LOCAL4 REMOTE4 LOCAL6 REMOTE6 CONFIG.json
# CONFIG: {"v4": {"out_spi":..,"in_spi":..,"crypt_algo":..,"out_key":hex,"in_key":hex,
#                 "auth_algo":..|null,"out_auth":hex,"in_auth":hex}, "v6": {...}}
import fcntl, json, logging, os, select, socket, struct, sys, time

logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import IP, IPv6, ESP, Raw
from scapy.layers.ipsec import SecurityAssociation

TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454ca, 0x0001, 0x1000


def sas(c, local_hdr, remote_hdr):
    def mk(spi, key, auth, hdr):
        return SecurityAssociation(ESP, spi=spi, crypt_algo=c['crypt_algo'],
                                   crypt_key=bytes.fromhex(key),
                                   auth_algo=c.get('auth_algo'),
                                   auth_key=bytes.fromhex(auth) if auth else None,
                                   tunnel_header=hdr)
    return (mk(c['out_spi'], c['out_key'], c.get('out_auth'), local_hdr),
            mk(c['in_spi'], c['in_key'], c.get('in_auth'), remote_hdr))


def main():
    tun_name, l4, r4, l6, r6, cfg_path = sys.argv[1:7]
    cfg = json.load(open(cfg_path))
    out4, in4 = sas(cfg['v4'], IP(src=l4, dst=r4), IP(src=r4, dst=l4))
    out6, in6 = sas(cfg['v6'], IPv6(src=l6, dst=r6), IPv6(src=r6, dst=l6))

    tun = os.open('/dev/net/tun', os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack('16sH', tun_name.encode(), IFF_TUN | IFF_NO_PI))
    rx4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ESP)
    rx6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ESP)
    tx4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    print('ready', flush=True)
    counts = {'enc4': 0, 'enc6': 0, 'dec4': 0, 'dec6': 0, 'bad': 0}
    last = time.time()
    while True:
        r, _, _ = select.select([tun, rx4, rx6], [], [], 1.0)
        if tun in r:
            pkt = os.read(tun, 65535)
            if pkt[0] >> 4 == 4:
                e = out4.encrypt(IP(pkt))
                tx4.sendto(bytes(e), (r4, 0))
                counts['enc4'] += 1
            elif pkt[0] >> 4 == 6:
                e = out6.encrypt(IPv6(pkt))
                # an IPv6 raw socket of protocol 50 sends the ESP header on; the kernel adds IPv6
                rx6.sendto(bytes(e[ESP]), (r6, 0, 0, 0))
                counts['enc6'] += 1
        if rx4 in r:
            data = rx4.recv(65535)
            try:
                inner = in4.decrypt(IP(data))
                os.write(tun, bytes(inner))
                counts['dec4'] += 1
            except Exception as ex:  # a bad packet is counted, never fatal
                counts['bad'] += 1
                print('v4 decrypt failed: %r' % ex, flush=True)
        if rx6 in r:
            data, addr = rx6.recvfrom(65535)
            try:
                outer = IPv6(bytes(IPv6(src=addr[0], dst=l6, nh=50, plen=len(data)) / Raw(data)))
                inner = in6.decrypt(outer)
                os.write(tun, bytes(inner))
                counts['dec6'] += 1
            except Exception as ex:
                counts['bad'] += 1
                print('v6 decrypt failed: %r' % ex, flush=True)
        if time.time() - last > 1:
            print(json.dumps(counts), flush=True)
            last = time.time()


if __name__ == '__main__':
    main()
