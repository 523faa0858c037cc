"""Messages per second through a WebSocket proxy, for bench/run.

Usage: ws_client.py HOST PORT PATH ORIGIN CONNECTIONS SECONDS SIZE [HEADER…]

Each of CONNECTIONS sockets does the handshake (with the extra HEADER lines, e.g. the session
cookie), then repeatedly sends a batch of masked SIZE-byte binary frames and reads until as many
bytes came back (the bench upstream echoes raw bytes). Prints "messages_per_second errors".
"""
import asyncio
import base64
import os
import sys
import time

host, port, path, origin = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
connections, seconds, size = int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
extra = sys.argv[8:]
BATCH = 256


def frame(payload: bytes) -> bytes:
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x82]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


BATCH_BYTES = b"".join(frame(os.urandom(size)) for _ in range(BATCH))


async def one(deadline, counts, errors):
    try:
        reader, writer = await asyncio.open_connection(host, port)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", f"Origin: {origin}", *extra]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            errors.append(head.split(b"\r\n", 1)[0].decode(errors="replace"))
            return
        messages = 0
        while time.monotonic() < deadline:
            writer.write(BATCH_BYTES)
            await reader.readexactly(len(BATCH_BYTES))
            messages += BATCH
        counts.append(messages)
        writer.close()
    except Exception as error:  # noqa: BLE001 - reported as an error count
        errors.append(str(error))


async def main():
    counts, errors = [], []
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(*[one(deadline, counts, errors) for _ in range(connections)])
    elapsed = time.monotonic() - started
    if errors:
        print(f"errors: {errors[:3]}", file=sys.stderr)
    print(f"{sum(counts) / elapsed:.0f} {len(errors)}")


asyncio.run(main())
