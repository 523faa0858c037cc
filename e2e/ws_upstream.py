"""A real WebSocket upstream for the e2e suite: the `websockets` library (PyPI) on asyncio.

Paths (any prefix is ignored; only the last segment counts, so `/api/echo` and `/echo` are one):

* ``/echo``   echoes every text and binary message; the text ``__headers__`` is answered with the
              handshake's request headers as JSON (what the gateway forwarded); ``__last_close__``
              with the close code and reason of the previous connection the client closed.
* ``/close``  closes at once with ``?code=`` and ``?reason=`` (default 4000 "bye").
* ``/refuse`` refuses the handshake with ``403`` and a JSON body (a non-101 answer).
* ``/badaccept`` answers ``101`` with a wrong ``Sec-WebSocket-Accept``.
* ``/feed``   sends ``tick N`` every 0.2 s.
* ``/__health`` (plain HTTP) ``200 ok``.

Usage: ``ws_upstream.py --port 0 --port-file FILE [--tls CERT KEY]`` (``--tls``: wss://).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Response

LAST_CLOSE: dict = {}


def _last_segment(path: str) -> str:
    return urlsplit(path).path.rstrip("/").rsplit("/", 1)[-1]


def process_request(connection, request):
    segment = _last_segment(request.path)
    if segment == "__health":
        return connection.respond(HTTPStatus.OK, "ok\n")
    if segment == "refuse":
        body = b'{"error":"forbidden_by_upstream"}'
        return Response(403, "Forbidden", Headers({"Content-Type": "application/json",
                                                  "Content-Length": str(len(body))}), body)
    return None


def process_response(connection, request, response):
    if _last_segment(request.path) == "badaccept" and response.status_code == 101:
        response.headers["Sec-WebSocket-Accept"] = "dGhlIHNhbXBsZSBub25jZQ=="
    return response


async def handler(ws):
    segment = _last_segment(ws.request.path)
    query = parse_qs(urlsplit(ws.request.path).query)
    if segment == "close":
        await ws.close(int(query.get("code", ["4000"])[0]), query.get("reason", ["bye"])[0])
        return
    if segment == "feed":
        n = 0
        try:
            while True:
                n += 1
                await ws.send(f"tick {n}")
                await asyncio.sleep(0.2)
        except ConnectionClosed:
            return
    try:
        async for message in ws:
            if message == "__headers__":
                await ws.send(json.dumps({k.lower(): v for k, v in ws.request.headers.raw_items()}))
            elif message == "__last_close__":
                await ws.send(json.dumps(LAST_CLOSE))
            else:
                await ws.send(message)
    except ConnectionClosed:
        pass
    finally:
        if ws.close_code is not None:
            LAST_CLOSE.clear()
            LAST_CLOSE.update({"code": ws.close_code, "reason": ws.close_reason})


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    args = parser.parse_args()
    context = None
    if args.tls:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
    async with serve(handler, "127.0.0.1", args.port, ssl=context, process_request=process_request,
                     process_response=process_response, max_size=None, compression="deflate",
                     ping_interval=None) as server:
        port = server.sockets[0].getsockname()[1]
        if args.port_file:
            with open(args.port_file + ".tmp", "w") as f:
                f.write(str(port))
            import os
            os.replace(args.port_file + ".tmp", args.port_file)
        print(f"ws upstream on 127.0.0.1:{port}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main())
