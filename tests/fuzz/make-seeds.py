#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the packet fuzzer's seed frames into corpus/packet/: one valid frame
of each kind the parser sorts, so that libFuzzer starts past the checksums
and lengths; and the BFD fuzzer's records into corpus/bfd/: sessions
brought Up (with and without a key), then flapped, polled, timed out. Run once by hand when the list changes; the frames are
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


def payload(n, fill, head=0):
    """n bytes of fill, the last one head: fuzz_packet.c reads the middle
    byte of a frame as the port's MTU (bit 2: 9000, else 1500) and its
    tunnel (bits 0-1), and the last one times 64 as the first buffer of a
    chained frame (0: not chained)."""
    return fill * (n - 1) + bytes([head])


def ext(nh, length=8):
    """An IPv6 extension header (hop-by-hop, destination options, routing)
    of length bytes, padded with PadN, next header nh."""
    return struct.pack("!BB", nh, length // 8 - 1) + b"\x01" + bytes([length - 3]) + \
        b"\0" * (length - 4)


def jumbo_frames():
    """Jumbo frames, up to the fuzzer's largest (FRAME_MAX, 9234 bytes: 9216
    of IP behind a tagged header), some chained."""
    ext_chain = ext(60) + ext(43) + struct.pack("!BBBB4x", 6, 0, 0, 0)  # routing, 0 left
    # the same with 40 bytes of destination options: TCP at 110, across
    # the end of a first buffer of 128 (dropped as CHAINED)
    ext_split = ext(60) + ext(43, 40) + struct.pack("!BBBB4x", 6, 0, 0, 0)
    return {
        # forwarded whole at MTU 9000 ('d': GRE over IPv4), too big at 1500 ('x')
        "tcp4-jumbo": eth(0x0800, ipv4(6, tcp(flags=0x10, data=payload(8000, b"d")))),
        "tcp4-jumbo-too-big": eth(0x0800, ipv4(6, tcp(flags=0x10, data=payload(8000, b"x")))),
        # without DF: 7 fragments at 1500
        "udp4-jumbo-nodf": eth(0x0800, ipv4(17, udp(data=payload(9216 - 28, b"x")), frag=0)),
        # the largest frame, tagged: 2 fragments at 9000
        "udp4-vlan-jumbo-max": eth(0x0800, ipv4(17, udp(data=payload(9216 - 28, b"d")), frag=0),
                                   vlan=7),
        "tcp6-jumbo": eth(0x86DD, ipv6(6, tcp(flags=0x10, data=payload(8000, b"e")))),
        # in 2 KiB buffers
        "udp4-jumbo-chained": eth(0x0800, ipv4(17, udp(data=payload(9216 - 28, b"d", 32)),
                                               frag=0)),
        "tcp6-jumbo-chained": eth(0x86DD, ipv6(6, tcp(flags=0x10, data=payload(8000, b"e", 32)))),
        # hop-by-hop, destination options, routing, then TCP: contiguous,
        # and chained with all of them in a first buffer of 128 bytes
        "tcp6-ext-chain": eth(0x86DD, ipv6(0, ext_chain + tcp())),
        "tcp6-ext-chain-chained": eth(0x86DD, ipv6(0, ext_chain + tcp(
            flags=0x10, data=payload(8000, b"e", 2)))),
        "tcp6-ext-chain-split": eth(0x86DD, ipv6(0, ext_split + tcp(
            flags=0x10, data=payload(8000, b"e", 2)))),
    }


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
        **jumbo_frames(),
    }


BFD_OUT = os.path.join(HERE, "corpus", "bfd")
# fuzz_bfd.c's record flags (its header says what each does)
TTL_OK, PORT_OK, FROM6, SET_YOUR, SIGN, SIGN_LEN = 2, 4, 0x08, 0x20, 0x40, 0x80
DOWN, INIT, UP = 1, 2, 3
POLL, FINAL = 0x20, 0x10


def bfd_packet(state, flags=0, your=0, seq=None, mult=3, my=0xABCD0001):
    """A BFD control packet (RFC 5880 4.1), 100 ms both ways; with seq,
    room for the auth section that fuzz_bfd.c signs."""
    pkt = struct.pack("!BBBBIIIII", 1 << 5, state << 6 | flags, mult, 24, my, your,
                      100000, 100000, 0)
    if seq is not None:
        pkt += struct.pack("!BBBBI", 5, 28, 1, 0, seq) + b"\0" * 20
    return pkt


def record(op, a=0, b=0, payload=b""):
    return bytes([op, a, b, len(payload)]) + payload


def bfd_up(auth=False, start_seq=1, a_extra=0):
    """Records that bring a session Up: the router's Down, then Init and
    Up, a Poll, a Final, and time passing between."""
    a = TTL_OK | PORT_OK | a_extra | (1 | SIGN | SIGN_LEN if auth else 0)
    seq = start_seq if auth else None
    out = b""
    for k, (state, flags, your) in enumerate([(DOWN, 0, False), (INIT, 0, True),
                                              (UP, POLL, True), (UP, FINAL, True)]):
        s = None if seq is None else seq + k
        out += record(0, a | (SET_YOUR if your else 0), 10,
                      bfd_packet(state, flags, seq=s))
        out += record(4, 0, 50)
    return out


def bfd_seeds():
    plain_up, auth_up = bfd_up(), bfd_up(auth=True)
    return {
        "up-plain": plain_up,
        "up-auth": auth_up,
        "up-v6": bfd_up(a_extra=FROM6),
        "serving-flap": plain_up + record(5, 0, 0) +
        record(0, TTL_OK | PORT_OK | SET_YOUR, 10, bfd_packet(DOWN, FINAL)) +
        record(4, 0, 50) + record(5, 1, 0) + record(4, 0, 50),
        "admin-down": auth_up + record(6, 2, 1) + record(4, 0, 200) + record(6, 0, 1),
        "intervals": plain_up + record(7, 199, 49) +
        record(0, TTL_OK | PORT_OK | SET_YOUR, 10, bfd_packet(UP, FINAL)),
        "timeout": plain_up + record(4, 0x40, 0),
        "replay": auth_up + record(0, 1 | TTL_OK | PORT_OK | SET_YOUR | SIGN | SIGN_LEN, 10,
                                   bfd_packet(UP, seq=4)),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, frame in frames().items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(frame + b"\0" * max(0, 60 - len(frame)))
    os.makedirs(BFD_OUT, exist_ok=True)
    for name, records in bfd_seeds().items():
        with open(os.path.join(BFD_OUT, name), "wb") as f:
            f.write(records)


if __name__ == "__main__":
    main()
