"""UDP ASSOCIATE through a SOCKS5 proxy with PySocks, for interop_test.go.

usage: pysocks_udp.py PROXY_PORT TARGET_PORT [USER PASS]
Sends three datagrams to 127.0.0.1:TARGET_PORT through the proxy at
127.0.0.1:PROXY_PORT and prints each reply with its source, one a line.
"""
import socket
import sys

import socks

proxy_port, target_port = int(sys.argv[1]), int(sys.argv[2])
user, password = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)

s = socks.socksocket(socket.AF_INET, socket.SOCK_DGRAM)
s.set_proxy(socks.SOCKS5, "127.0.0.1", proxy_port, username=user, password=password)
s.settimeout(5)
s.bind(("127.0.0.1", 0))
for i in range(3):
    s.sendto(b"ping %d" % i, ("127.0.0.1", target_port))
    data, addr = s.recvfrom(2048)
    print("%s %s:%d" % (data.decode(), addr[0], addr[1]))
s.close()
