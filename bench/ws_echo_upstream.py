"""The WebSocket upstream of bench/run: answers the handshake (RFC 6455 §4.2.2), then echoes every
byte it reads, frames untouched. Echoing raw bytes keeps the upstream out of the measurement: the
client's frames come back as sent, and the client counts bytes, not parsed messages.

Usage: ws_echo_upstream.py PORT_FILE   (listens on a free loopback port and writes it there)
"""
import asyncio
import base64
import hashlib
import os
import sys

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


async def serve_one(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        key = b""
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"sec-websocket-key":
                key = value.strip()
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        while True:
            data = await reader.read(256 * 1024)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(serve_one, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    async with server:
        await server.serve_forever()


asyncio.run(main())
