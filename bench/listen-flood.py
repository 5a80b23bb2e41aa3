#!/usr/bin/env python3
"""Scrapes a --listen server while other clients flood it.

Usage: bench/listen-flood.py PORT CLIENTS SECONDS [silent|pipeline] [ADDRESSES]

CLIENTS threads connect to 127.0.0.1:PORT and reconnect as soon as they
are closed; meanwhile curl scrapes /metrics every 50 ms (at most 2 s
each). Prints how many scrapes were answered with 200 and how many failed.

  silent    (the default) each thread from its own address of 127/8
            (127.0.1.1 on), sending nothing;
  pipeline  the threads from ADDRESSES addresses (default 2: 127.0.0.1,
            where curl scrapes from, and 127.0.0.2), each sending HEAD
            requests without pause and never reading the answers.

Start the server first, e.g. `iostat-rs -d --listen 127.0.0.1:19102 &`;
every connection is to 127.0.0.1 and the threads end after SECONDS.
"""
import socket
import subprocess
import sys
import threading
import time

HEADS = b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 20


def client(source, port, stop_at, pipeline):
    while time.time() < stop_at:
        s = socket.socket()
        try:
            s.bind((source, 0))
            s.settimeout(0.2 if pipeline else 1.0)
            s.connect(("127.0.0.1", port))
            while time.time() < stop_at:
                if pipeline:
                    try:
                        s.send(HEADS)
                    except socket.timeout:
                        pass
                elif not s.recv(1):
                    break
        except OSError:
            time.sleep(0.001)
        finally:
            s.close()


def main():
    port, clients, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    pipeline = len(sys.argv) > 4 and sys.argv[4] == "pipeline"
    addresses = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    stop_at = time.time() + seconds
    for i in range(clients):
        if pipeline:
            source = "127.0.0.%d" % (1 + i % addresses)
        else:
            source = "127.0.%d.%d" % (1 + i // 250, 1 + i % 250)
        threading.Thread(target=client, args=(source, port, stop_at, pipeline),
                         daemon=True).start()
    time.sleep(0.5)
    answered = failed = 0
    while time.time() < stop_at - 0.3:
        run = subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "--max-time", "2", "-w", "%{http_code}",
             "http://127.0.0.1:%d/metrics" % port],
            capture_output=True, text=True)
        if run.stdout == "200":
            answered += 1
        else:
            failed += 1
        time.sleep(0.05)
    print("answered %d failed %d" % (answered, failed))


main()
