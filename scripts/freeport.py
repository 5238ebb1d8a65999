"""free_port for the measurement scripts (bench, stream-scale, consumer-scale, idle-cpu).

A free port below the kernel's ephemeral range when it is known: a port from that range can
meanwhile become the local end of a route that a server already running dials, and the next
server's listen fails (stream-scale once stopped with "n2 did not start"). No port is handed
out twice in one run: two draws for one cluster once came out equal ("address already in use"
on a route port).
"""
import random, socket, sys


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


_handed = set()


def free_port():
    low = _ephemeral_low()
    for _ in range(200):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", random.randrange(10000, low) if low > 11000 else 0))
            port = s.getsockname()[1]
            if port in _handed:
                continue
            _handed.add(port)
            return port
        except OSError:
            continue
        finally:
            s.close()
    sys.exit("no free port")
