#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the packet fuzzer's seed frames into corpus/packet/: one valid frame
of each kind the parser sorts, so that libFuzzer starts past the checksums
and lengths. Run once by hand when the list changes; the frames are
committed. Addresses: 198.18.0.0/15 and 2001:db8::/32, the VIPs of
fuzz_packet.c's table."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "packet")

DST_MAC = bytes.fromhex("020000000010")
SRC_MAC = bytes.fromhex("020000000001")
VIP4, CLIENT4 = bytes([198, 18, 1, 1]), bytes([198, 18, 10, 2])
VIP6 = bytes.fromhex("20010db8000100000000000000000001")
CLIENT6 = bytes.fromhex("20010db8001000000000000000000002")
ND_MCAST = bytes.fromhex("ff0200000000000000000001ff000001")


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(ethertype, payload, vlan=None):
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return DST_MAC + SRC_MAC + tag + struct.pack("!H", ethertype) + payload


def ipv4(proto, payload, src=CLIENT4, dst=VIP4, frag=0x4000, options=b"", ttl=64):
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(payload), 1,
                      frag, ttl, proto, 0, src, dst) + options
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + payload


def ipv6(nh, payload, src=CLIENT6, dst=VIP6, hlim=64):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, hlim, src, dst) + payload


def tcp(sport=40000, dport=80, flags=0x02, data=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags, 65535, 0, 0) + data


def udp(sport=40000, dport=53, data=b"seed"):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


def icmp(kind, code, rest, body):
    return struct.pack("!BBH", kind, code, 0) + rest + body


def arp_request():
    return struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, SRC_MAC, CLIENT4,
                       b"\0" * 6, VIP4)


def nd_ns():
    body = struct.pack("!I16s", 0, VIP6) + struct.pack("!BB6s", 1, 1, SRC_MAC)
    msg = struct.pack("!BBH", 135, 0, 0) + body
    pseudo = CLIENT6 + ND_MCAST + struct.pack("!IxxxB", len(msg), 58)
    msg = msg[:2] + struct.pack("!H", csum(pseudo + msg)) + msg[4:]
    return ipv6(58, msg, dst=ND_MCAST, hlim=255)


def frames():
    big = b"x" * 1600
    # the backend's answer, bounced back to the VIP by a router
    reply4 = ipv4(6, tcp(80, 40000, 0x12), src=VIP4, dst=CLIENT4)
    reply6 = ipv6(6, tcp(80, 40000, 0x12), src=VIP6, dst=CLIENT6)
    frag6 = struct.pack("!BBHI", 17, 0, 0x0001, 7) + udp()   # offset 0, M set
    return {
        "tcp4-syn": eth(0x0800, ipv4(6, tcp())),
        "tcp4-ack-data": eth(0x0800, ipv4(6, tcp(flags=0x10, data=b"hello"))),
        "udp4": eth(0x0800, ipv4(17, udp(dport=5353))),
        "tcp4-vlan": eth(0x0800, ipv4(6, tcp()), vlan=7),
        "tcp4-options": eth(0x0800, ipv4(6, tcp(), options=b"\x94\x04\0\0")),
        "tcp4-big-df": eth(0x0800, ipv4(6, tcp(flags=0x10, data=big))),
        "udp4-big-nodf": eth(0x0800, ipv4(17, udp(data=big), frag=0)),
        "udp4-fragment": eth(0x0800, ipv4(17, udp(), frag=0x2000)),
        "icmp4-frag-needed": eth(0x0800, ipv4(1, icmp(3, 4, struct.pack("!HH", 0, 1400),
                                                      reply4[:28]),
                                              src=bytes([198, 18, 0, 1]))),
        "icmp4-echo": eth(0x0800, ipv4(1, icmp(8, 0, b"\0\1\0\1", b"ping"))),
        "tcp6-syn": eth(0x86DD, ipv6(6, tcp())),
        "udp6": eth(0x86DD, ipv6(17, udp(dport=5353))),
        "tcp6-big": eth(0x86DD, ipv6(6, tcp(flags=0x10, data=big))),
        "udp6-fragment": eth(0x86DD, ipv6(44, frag6)),
        "udp6-hop-by-hop": eth(0x86DD, ipv6(0, struct.pack("!BB6s", 17, 0, b"\1\4\0\0\0\0")
                                            + udp())),
        "icmp6-too-big": eth(0x86DD, ipv6(58, icmp(2, 0, struct.pack("!I", 1280),
                                                   reply6[:48]),
                                          src=bytes.fromhex("20010db8" + "00" * 11 + "01"))),
        "arp-request": eth(0x0806, arp_request()),
        "nd-ns": eth(0x86DD, nd_ns()),
        "gre4": eth(0x0800, ipv4(47, b"\0\0\x08\0" + ipv4(6, tcp()))),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, frame in frames().items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(frame + b"\0" * max(0, 60 - len(frame)))


if __name__ == "__main__":
    main()
