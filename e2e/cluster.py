"""Two gateways on one database behind a real nginx (issue 12, "several instances").

* ``Balancer``: Debian's nginx, run as the current user with a config in a temp dir: ``upstream``
  round-robin over the gateways, no sticky sessions, each answer marked with the instance that served
  it (``X-Served-By``, test-only) so tests can see the spread.
* ``Cluster``: gateways A and B sharing ``GATEHOUSE_DATABASE``, ``GATEHOUSE_SECRET_KEY`` and a
  ``GATEHOUSE_PUBLIC_URL`` that is the balancer's; it looks like a ``Gateway`` to ``harness.login``
  (``url``, ``public_url``, ``cookie_name``, ``get``/``post``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import requests

from harness import ARTIFACTS, Gateway, Proc, free_port, random_secret_key, wait_http_ok

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

NGINX_CONF = """
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log info;
events {{ worker_connections 1024; }}
http {{
    access_log {work}/access.log;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    upstream gatehouse {{
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://gatehouse;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_next_upstream error timeout;
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
            proxy_buffering off;
            add_header X-Served-By $upstream_addr always;
        }}
    }}
}}
"""


class Balancer:
    """nginx in front of ``backends`` (``host:port`` strings), round-robin."""

    def __init__(self, work: Path, backends: list[str], port: int | None = None, name="nginx"):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        servers = "\n".join(f"        server {b} max_fails=1 fail_timeout=2s;" for b in backends)
        conf = self.work / "nginx.conf"
        conf.write_text(NGINX_CONF.format(work=self.work, servers=servers, port=self.port))
        check = subprocess.run([NGINX, "-t", "-e", "stderr", "-p", str(self.work), "-c", str(conf)],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr
        self.proc = Proc(name, [NGINX, "-e", "stderr", "-p", str(self.work), "-c", str(conf),
                                "-g", "daemon off;"]).start()
        wait_http_ok(self.url + "/healthz", self.proc)

    def stop(self):
        self.proc.stop()
        error_log = self.work / "error.log"
        if error_log.exists():
            logs = ARTIFACTS / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            shutil.copy(error_log, logs / f"{self.proc.name}-error.log")


class Cluster:
    """Gateways A and B on one database behind a ``Balancer``."""

    def __init__(self, provider, upstream, work: Path, database: str, env: dict | None = None,
                 name="cluster"):
        work = Path(work)
        self.provider = provider
        self.balancer_port = free_port()
        self.url = f"http://127.0.0.1:{self.balancer_port}"
        self.public_url = self.url
        shared = {
            "GATEHOUSE_DATABASE": database,
            "GATEHOUSE_SECRET_KEY": random_secret_key(),
            "GATEHOUSE_PUBLIC_URL": self.url,
            "GATEHOUSE_TRUSTED_PROXIES": "127.0.0.1/32",
            **(env or {}),
        }
        self.gateways: list[Gateway] = []
        self.balancer: Balancer | None = None
        try:
            # A first: it migrates; B then finds the schema current (both at once is tested by pgstore).
            for label in ("a", "b"):
                self.gateways.append(Gateway(provider, upstream, work / f"gw-{label}", env=shared,
                                             name=f"{name}-{label}", register=(label == "a")))
            self.balancer = Balancer(work / "nginx", [f"127.0.0.1:{g.port}" for g in self.gateways],
                                     port=self.balancer_port, name=f"{name}-nginx")
        except BaseException:
            self.stop()
            raise

    @property
    def a(self) -> Gateway:
        return self.gateways[0]

    @property
    def b(self) -> Gateway:
        return self.gateways[1]

    @property
    def cookie_name(self) -> str:
        return self.a.cookie_name

    def served_by(self, response: requests.Response) -> Gateway:
        """The instance that answered ``response`` (through the balancer)."""
        addr = response.headers.get("X-Served-By", "").split(",")[-1].strip()
        return next(g for g in self.gateways if addr.endswith(f":{g.port}"))

    # A Gateway's HTTP helpers, aimed at the balancer (they use only `self.url`).
    get = Gateway.get
    post = Gateway.post
    request = Gateway.request

    def stop(self):
        if self.balancer is not None:
            self.balancer.stop()
        for g in self.gateways:
            g.stop()
