#!/usr/bin/env python3
"""Recompute a drawn waiting room's order (docs/waiting-room.md, "Verifying a draw").

Holdfast publishes, for a campaign with `"draw": "random"`, the SHA-256 of the draw's seed when
the campaign is created, and after `starts_at` the seed itself and each ticket counter's value at
the start (`GET /campaigns/{id}/queue`: `seed_sha256`, `seed`, `pre_start`). From those alone this
script checks the commitment and prints every pre-start ticket's position, so anyone can confirm
that nobody chose the order after seeing who joined.

    python3 scripts/verify-draw.py --seed <hex> --seed-sha256 <hex> --pre-start 3,2,2,1 [--ticket N ...]

Ticket numbers interleave over the counters: counter k (0-based) of K hands out k+1, k+1+K, …
The draw is a four-round Feistel network over the smallest even power of two at least the number
of pre-start tickets, walked until it lands inside; its round function is the first 8 bytes
(big-endian) of SHA-256(seed as ASCII || round byte || value as 8 bytes big-endian), masked to
half the bits. Tickets taken after the start follow all drawn ones (position = drawn + number).
"""
import argparse
import hashlib
import sys


def shuffle(seed: str, n: int, i: int) -> int:
    if n <= 1:
        return 0
    bits = (n - 1).bit_length()
    if bits % 2 == 1:
        bits += 1
    half = bits // 2
    mask = (1 << half) - 1

    def rnd(r: int, x: int) -> int:
        h = hashlib.sha256(seed.encode() + bytes([r]) + x.to_bytes(8, "big")).digest()
        return int.from_bytes(h[:8], "big") & mask

    x = i
    while True:
        left, right = x >> half, x & mask
        for k in range(4):
            left, right = right, left ^ rnd(k, right)
        x = (left << half) | right
        if x < n:
            return x


def pre_start_tickets(pre: list[int]) -> list[int]:
    k = len(pre)
    return sorted(c + 1 + i * k for c, count in enumerate(pre) for i in range(count))


def position(seed: str, pre: list[int], ticket: int) -> int:
    drawn = pre_start_tickets(pre)
    n = len(drawn)
    if ticket in drawn:
        return shuffle(seed, n, drawn.index(ticket)) + 1
    return n + ticket


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", required=True)
    ap.add_argument("--seed-sha256", required=True, help="the hash published at the campaign's creation")
    ap.add_argument("--pre-start", required=True, help="the counters at the start, comma-separated")
    ap.add_argument("--ticket", type=int, action="append", help="print only these tickets' positions")
    a = ap.parse_args()
    if hashlib.sha256(a.seed.encode()).hexdigest() != a.seed_sha256.lower():
        print("the seed does not match the published SHA-256", file=sys.stderr)
        return 1
    pre = [int(x) for x in a.pre_start.split(",") if x]
    tickets = a.ticket or pre_start_tickets(pre)
    for t in tickets:
        print(f"{t} {position(a.seed, pre, t)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
