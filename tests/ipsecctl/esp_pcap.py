#!/usr/bin/python3
# tests/ipsecctl/esp_pcap.py: writes a pcap of ESP packets made by scapy (an ESP implementation
# nobody here wrote) for every ESP SA that `ipsecctl --json --show-keys show sa` lists, so that
# tshark, given only `ipsecctl export wireshark`, can be asked to decrypt them (tshark.sh).
# Each SA carries UDP packets to port 40000 + (spi & 0xfff) with the payload "xipsec spi 0x...".
import json
import sys

from scapy.all import IP, IPv6, UDP, Ether, Raw, wrpcap
from scapy.layers.ipsec import ESP, SecurityAssociation

ENC = {"aes128gcm16": "AES-GCM", "aes256gcm16": "AES-GCM", "aes128": "AES-CBC",
       "aes256": "AES-CBC", "aes128ctr": "AES-CTR", "3des": "3DES", "null": "NULL"}
AUTH = {None: None, "sha1": "HMAC-SHA1-96", "sha256": "SHA2-256-128", "sha384": "SHA2-384-192",
        "sha512": "SHA2-512-256", "md5": "HMAC-MD5-96"}


def unhex(s):
    return bytes.fromhex(s[2:]) if len(s) > 2 else b""


def main(js, out):
    sas = json.load(open(js))["sas"]
    pkts = []
    for sa in sas:
        if sa["proto"] != "esp" or sa["enc"] not in ENC:
            continue
        keys = sa["keys"]
        ip = IPv6 if ":" in sa["src"] else IP
        tun = ip(src=sa["src"], dst=sa["dst"])
        kw = dict(spi=sa["spi"], crypt_algo=ENC[sa["enc"]],
                  crypt_key=unhex(keys["enc"]) + unhex(keys["salt"]))
        if sa["enc"].endswith("gcm16"):
            kw["crypt_icv_size"] = 16
        if AUTH[sa["auth"]]:
            kw["auth_algo"] = AUTH[sa["auth"]]
            kw["auth_key"] = unhex(keys["auth"])
        if sa["mode"] == "tunnel":
            kw["tunnel_header"] = tun
        if sa["encap"]:
            kw["nat_t_header"] = UDP(sport=sa["encap"]["sport"], dport=sa["encap"]["dport"])
        esp = SecurityAssociation(ESP, **kw)
        inner = ip(src=sa["src"], dst=sa["dst"])
        if sa["mode"] == "tunnel":
            inner = (IPv6 if ip is IPv6 else IP)(src="10.1.0.1" if ip is IP else "2001:db8:1::1",
                                                 dst="10.2.0.1" if ip is IP else "2001:db8:2::1")
        for i in range(2):
            p = inner / UDP(sport=1234, dport=40000 + (sa["spi"] & 0xfff)) / \
                Raw(b"xipsec spi 0x%08x #%d" % (sa["spi"], i))
            p = ip(bytes(p))  # fill lengths and checksums before encryption
            e = esp.encrypt(p)
            if sa["encap"]:
                # scapy 2.5 leaves the NAT-T UDP length at 8: let it be recomputed.
                del e[UDP].len
                del e[UDP].chksum
                e = ip(bytes(e))
            # An Ethernet header gives IPv4 and IPv6 packets one link type.
            pkts.append(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / e)
    wrpcap(out, pkts)
    print(len(pkts))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
