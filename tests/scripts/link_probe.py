#!/usr/bin/env python3
"""Measures an emulated link (scripts/bench/netns_cluster.sh): run in every node; node 0 serves, the
others time 1-byte TCP round trips to it and one bulk transfer of BYTES, and print
  round_trip_ms <median>  and  megabits_per_s <rate>
  link_probe.py [BYTES] [ROUND_TRIPS]"""
import os
import socket
import statistics
import sys
import time

PORT = 29741


def serve(peers):
    with socket.create_server(("0.0.0.0", PORT)) as server:
        for _ in range(peers):
            connection, _ = server.accept()
            with connection:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                while True:  # echo single bytes until the client says 'b' (bulk), then read it all
                    byte = connection.recv(1)
                    if byte in (b"", b"b"):
                        break
                    connection.sendall(byte)
                while connection.recv(1 << 20):
                    pass


def connect(address):
    deadline = time.monotonic() + 20
    while True:
        try:
            return socket.create_connection((address, PORT), timeout=20)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def probe(address, total_bytes, round_trips):
    with connect(address) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for _ in range(round_trips):
            start = time.perf_counter()
            connection.sendall(b"p")
            if connection.recv(1) != b"p":
                sys.exit("link_probe: the echo server answered something else")
            times.append(time.perf_counter() - start)
        connection.sendall(b"b")
        chunk = b"\0" * (1 << 16)
        start = time.perf_counter()
        for _ in range(total_bytes // len(chunk)):
            connection.sendall(chunk)
        connection.shutdown(socket.SHUT_WR)
        connection.recv(1)  # returns when the server has read everything and closed
        seconds = time.perf_counter() - start
    print(f"round_trip_ms {statistics.median(times) * 1e3:.3f}")
    print(f"megabits_per_s {total_bytes * 8 / seconds / 1e6:.1f}")


def main():
    total_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else 4 << 20
    round_trips = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    if os.environ["SG2_NODE_RANK"] == "0":
        serve(int(os.environ["SG2_NNODES"]) - 1)
    else:
        probe(os.environ["SG2_MASTER_ADDR"], total_bytes, round_trips)


if __name__ == "__main__":
    main()
