#!/usr/bin/env python3
"""Scrapes a --listen server while silent clients flood it.

Usage: bench/listen-flood.py PORT CLIENTS SECONDS

CLIENTS threads, each from its own address of 127/8, connect to
127.0.0.1:PORT, send nothing and reconnect as soon as they are closed;
meanwhile curl scrapes /metrics every 50 ms (at most 2 s each). Prints
how many scrapes were answered with 200 and how many failed. Start the
server first, e.g. `iostat-rs -d --listen 127.0.0.1:19102 &`; every
connection is to 127.0.0.1 and the threads end after SECONDS.
"""
import socket
import subprocess
import sys
import threading
import time


def silent_client(index, port, stop_at):
    source = "127.0.%d.%d" % (1 + index // 250, 1 + index % 250)
    while time.time() < stop_at:
        try:
            s = socket.socket()
            s.bind((source, 0))
            s.settimeout(1.0)
            s.connect(("127.0.0.1", port))
            try:
                while time.time() < stop_at and s.recv(1):
                    pass
            except OSError:
                pass
            finally:
                s.close()
        except OSError:
            time.sleep(0.001)


def main():
    port, clients, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    stop_at = time.time() + seconds
    for i in range(clients):
        threading.Thread(target=silent_client, args=(i, port, stop_at), daemon=True).start()
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
