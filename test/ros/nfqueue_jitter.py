"""Packet jitter without netem: hold each packet of an NFQUEUE for a random time, then accept it.

    ip netns exec NS python test/ros/nfqueue_jitter.py --queue 0 --max-delay-ms 1.0

For kernels without the netem qdisc (CONFIG_NET_SCH_NETEM unset). Packets
reach it through an iptables rule of the same network namespace
(``-j NFQUEUE --queue-num 0 --queue-bypass``); each is held for a delay
drawn uniformly from [0, max_delay] and accepted (NF_ACCEPT) when that time
has come, so later packets may overtake earlier ones, as with netem's
jitter. Pure Python over a NETLINK_NETFILTER socket (the nfnetlink_queue
protocol of linux/netfilter/nfnetlink_queue.h: bind, copy metadata only,
fail-open when its queue is full, verdicts by packet id); no library.

Prints ``BOUND queue <n>`` once it receives packets, and on SIGINT or
SIGTERM one line ``STATS <json>``: packets, accepted, the mean and largest
hold [ms] (the time from receipt to verdict, scheduling included) and the
receive errors (ENOBUFS: the kernel could not hand it a packet; with
fail-open such a packet passes without delay). Exits 3 with a message
naming the kernel feature when the netlink socket or the queue cannot be
had.
"""
import argparse
import errno
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN = 1
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NLA_TYPE_MASK = 0x3fff
HEADER = struct.Struct('=IHHII')           # struct nlmsghdr


def _attr(kind, data):
    size = 4 + len(data)
    return struct.pack('=HH', size, kind) + data + b'\0' * (-size % 4)


def _message(kind, flags, seq, queue, attrs):
    # struct nfgenmsg: family (AF_UNSPEC), version (NFNETLINK_V0), res_id (the queue, big-endian)
    payload = struct.pack('!BBH', 0, 0, queue) + b''.join(attrs)
    return HEADER.pack(HEADER.size + len(payload), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, seq, 0) + payload


class Queue:
    """One bound nfnetlink queue."""

    def __init__(self, number):
        self.number = number
        self.seq = 0
        try:
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        except OSError as exc:
            raise SystemExit('nfqueue_jitter: no NETLINK_NETFILTER socket (%s): the kernel needs '
                             'CONFIG_NETFILTER_NETLINK' % exc)
        self.sock.bind((0, 0))
        for option in (33, socket.SO_RCVBUF):          # SO_RCVBUFFORCE (root), else the capped one
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, option, 8 << 20)
                break
            except OSError:
                continue
        self._config([_attr(NFQA_CFG_CMD, struct.pack('!BxH', NFQNL_CFG_CMD_BIND, 0))], 'bind')
        self._config([_attr(NFQA_CFG_PARAMS, struct.pack('!IB', 0xffff, NFQNL_COPY_META))], 'copy mode')
        self._config([_attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack('!I', 4096))], 'queue length')
        self._config([_attr(NFQA_CFG_FLAGS, struct.pack('!I', NFQA_CFG_F_FAIL_OPEN)),
                      _attr(NFQA_CFG_MASK, struct.pack('!I', NFQA_CFG_F_FAIL_OPEN))], 'fail-open')

    def _config(self, attrs, what):
        self.seq += 1
        self.sock.send(_message(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, self.seq, self.number, attrs))
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.sock], [], [], 0.2)
            if not ready:
                continue
            data = self.sock.recv(65536)
            for kind, seq, payload in self._split(data):
                if kind == NLMSG_ERROR and seq == self.seq:
                    code = struct.unpack_from('=i', payload)[0]
                    if code:
                        raise SystemExit('nfqueue_jitter: %s of queue %d refused: %s: the kernel needs '
                                         'CONFIG_NETFILTER_NETLINK_QUEUE (nfnetlink_queue)'
                                         % (what, self.number, os.strerror(-code)))
                    return
        raise SystemExit('nfqueue_jitter: no answer to the %s of queue %d: the kernel needs '
                         'CONFIG_NETFILTER_NETLINK_QUEUE (nfnetlink_queue)' % (what, self.number))

    @staticmethod
    def _split(data):
        off = 0
        while off + HEADER.size <= len(data):
            size, kind, _, seq, _ = HEADER.unpack_from(data, off)
            if size < HEADER.size:
                break
            yield kind, seq, data[off + HEADER.size:off + size]
            off += (size + 3) & ~3

    def packet_ids(self, data):
        """The packet ids of the queue's messages in ``data``."""
        for kind, _, payload in self._split(data):
            if kind != (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                continue
            off = 4                                     # after struct nfgenmsg
            while off + 4 <= len(payload):
                size, atype = struct.unpack_from('=HH', payload, off)
                if size < 4:
                    break
                if atype & NLA_TYPE_MASK == NFQA_PACKET_HDR:
                    yield struct.unpack_from('!I', payload, off + 4)[0]
                    break
                off += (size + 3) & ~3

    def accept(self, packet_id):
        self.seq += 1
        self.sock.send(_message(NFQNL_MSG_VERDICT, NLM_F_REQUEST, self.seq, self.number,
                                [_attr(NFQA_VERDICT_HDR, struct.pack('!II', NF_ACCEPT, packet_id))]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--queue', type=int, default=0)
    parser.add_argument('--max-delay-ms', type=float, default=1.0, help='largest hold [ms] (1.0)')
    parser.add_argument('--seed', type=int, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    max_delay = args.max_delay_ms * 1e-3
    queue = Queue(args.queue)
    print('BOUND queue %d, holds uniform in [0, %g] ms' % (args.queue, args.max_delay_ms), flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    held = []                                           # heap of (due, received, packet id)
    stats = {'packets': 0, 'accepted': 0, 'hold_sum_ms': 0.0, 'hold_max_ms': 0.0, 'receive_errors': 0}
    while not stop:
        now = time.monotonic()
        timeout = max(0.0, held[0][0] - now) if held else 0.1
        try:
            ready, _, _ = select.select([queue.sock], [], [], timeout)
        except InterruptedError:
            continue
        if ready:
            try:
                data = queue.sock.recv(1 << 20)
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise
                stats['receive_errors'] += 1
                data = b''
            t = time.monotonic()
            for packet_id in queue.packet_ids(data):
                stats['packets'] += 1
                heapq.heappush(held, (t + rng.uniform(0.0, max_delay), t, packet_id))
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, received, packet_id = heapq.heappop(held)
            queue.accept(packet_id)
            hold = (time.monotonic() - received) * 1e3
            stats['accepted'] += 1
            stats['hold_sum_ms'] += hold
            stats['hold_max_ms'] = max(stats['hold_max_ms'], hold)
    for _, _, packet_id in held:                        # nothing stays queued
        queue.accept(packet_id)
        stats['accepted'] += 1
    stats['hold_mean_ms'] = stats.pop('hold_sum_ms') / max(stats['accepted'], 1)
    print('STATS %s' % json.dumps(stats), flush=True)


if __name__ == '__main__':
    sys.exit(main())
